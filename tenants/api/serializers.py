from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone
from rest_framework import serializers

from gpuplatform.api.serializers import StrictModelSerializer, StrictSerializer
from tenants.models import Membership, Role, Tenant, TenantState, dns_label


class NamespaceSerializer(StrictSerializer):
    cluster = serializers.CharField(max_length=63, allow_blank=True, default="")
    namespace = serializers.CharField(max_length=63, validators=[dns_label])


class TenantSerializer(StrictModelSerializer):
    parent = serializers.SerializerMethodField()  # type: ignore[assignment]
    parent_id = serializers.UUIDField(write_only=True, required=False, allow_null=True)
    children_count = serializers.IntegerField(read_only=True)
    member_count = serializers.IntegerField(read_only=True)
    namespaces = NamespaceSerializer(many=True, required=False)
    slug = serializers.CharField(max_length=63, validators=[dns_label])
    state = serializers.ChoiceField(choices=TenantState.choices, required=False)

    class Meta:
        model = Tenant
        fields = [
            "id",
            "slug",
            "display_name",
            "cost_centre",
            "namespace_prefix",
            "state",
            "parent",
            "parent_id",
            "depth",
            "children_count",
            "member_count",
            "namespaces",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "depth", "created_at", "updated_at"]

    def to_representation(self, tenant: Tenant) -> dict[str, Any]:
        """Rendered by hand: a page renders a hundred tenants, and DRF's per-field machinery was a
        third of the list's time. `tests/tenants/test_tenant_representation.py` pins this to what
        the declared fields render. A page's namespaces come from one query made by the list view
        (``namespaces_by_tenant`` in the context): Django's prefetch clones a queryset per tenant."""
        known = self.context.get("namespaces_by_tenant")
        if known is not None:
            namespaces = known.get(tenant.pk, [])
        else:
            namespaces = [{"cluster": n.cluster, "namespace": n.namespace} for n in tenant.namespaces.all()]
        data = {
            "id": str(tenant.pk),
            "slug": tenant.slug,
            "display_name": tenant.display_name,
            "cost_centre": tenant.cost_centre,
            "namespace_prefix": tenant.namespace_prefix,
            "state": tenant.state,
            "parent": self.get_parent(tenant),
            "depth": tenant.depth,
        }
        for count in ("children_count", "member_count"):  # annotations: absent (as DRF omits) if not made
            if hasattr(tenant, count):
                data[count] = getattr(tenant, count)
        data["namespaces"] = namespaces
        data["created_at"] = self._iso(tenant.created_at)
        data["updated_at"] = self._iso(tenant.updated_at)
        return data

    def _iso(self, value: datetime) -> str:
        """DRF's ISO 8601 rendering of an aware datetime, with the current zone looked up once per
        serializer rather than per field and row (a page has 200 of them)."""
        zone = getattr(self, "_zone", None)
        if zone is None:
            zone = self._zone = timezone.get_current_timezone()
        text = value.astimezone(zone).isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text

    def get_parent(self, tenant: Tenant) -> str | None:
        """The parent's id, or null when the parent is outside what the caller may see."""
        visibility = self.context.get("visibility")
        if tenant.parent_id is None:
            return None
        parent_path = tenant.path[: tenant.path.rstrip("/").rfind("/") + 1]
        if visibility is not None and not visibility.sees_path(tenant.parent_id, parent_path):
            return None
        return str(tenant.parent_id)

    def to_internal_value(self, data: Any) -> Any:
        # Accept the read-side name "parent" on writes too, as clients naturally echo it back.
        if isinstance(data, dict) and "parent" in data and "parent_id" not in data:
            data = {**data, "parent_id": data["parent"]}
            data.pop("parent")
        return super().to_internal_value(data)


class MembershipSerializer(StrictModelSerializer):
    tenant = serializers.UUIDField(source="tenant_id", read_only=True)
    tenant_id = serializers.UUIDField(write_only=True)
    tenant_slug = serializers.CharField(source="tenant.slug", read_only=True)
    user = serializers.CharField(source="user.username", max_length=150)
    user_display_name = serializers.SerializerMethodField()
    role = serializers.ChoiceField(choices=Role.choices)

    class Meta:
        model = Membership
        fields = [
            "id",
            "tenant",
            "tenant_id",
            "tenant_slug",
            "user",
            "user_display_name",
            "role",
            "created_at",
        ]
        read_only_fields = ["id", "created_at"]

    def get_user_display_name(self, membership: Membership) -> str:
        return membership.user.get_full_name() or membership.user.username

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict) and "tenant" in data and "tenant_id" not in data:
            data = {**data, "tenant_id": data["tenant"]}
            data.pop("tenant")
        return super().to_internal_value(data)


class MembershipRoleSerializer(StrictSerializer):
    role = serializers.ChoiceField(choices=Role.choices)
