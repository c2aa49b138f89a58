"""REST for sharing policies: declare per pool (platform-admins), preview what a mode yields."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from gpuplatform.api.filters import FilterSet, IdOrNameFilter
from gpuplatform.api.serializers import StrictModelSerializer, StrictSerializer
from gpuplatform.api.viewsets import ScopedViewSet
from gpuplatform.errors import Forbidden
from inventory.models import NodePool
from policies.compiler import SharingMode, tradeoff
from policies.models import SharingPolicy
from policies.selectors import agent_coverage
from policies.services.sharing import preview_policy, set_sharing_policy


def require_platform_admin(user: Any, what: str) -> None:
    if not getattr(user, "is_platform_admin", False):
        raise Forbidden(f"Only platform-admins {what}.")


class SharingPolicySerializer(StrictModelSerializer):
    pool = serializers.PrimaryKeyRelatedField(queryset=NodePool.objects.all())
    mode = serializers.ChoiceField(choices=[m.value for m in SharingMode])
    parameters = serializers.DictField(required=False, default=dict)
    resource_name = serializers.CharField(max_length=63, required=False, allow_blank=True, default="")
    pool_name = serializers.CharField(source="pool.name", read_only=True)
    cluster = serializers.CharField(source="pool.cluster.name", read_only=True)

    class Meta:
        model = SharingPolicy
        fields = [
            "id",
            "pool",
            "pool_name",
            "cluster",
            "mode",
            "parameters",
            "resource_name",
            "published_revision",
            "updated_at",
        ]
        read_only_fields = ["id", "published_revision", "updated_at"]


class PreviewRequestSerializer(StrictSerializer):
    pool = serializers.UUIDField()
    mode = serializers.ChoiceField(choices=[m.value for m in SharingMode])
    parameters = serializers.DictField(required=False, default=dict)
    resource_name = serializers.CharField(max_length=63, required=False, allow_blank=True, default="")


class SharingPolicyFilter(FilterSet):
    pool = IdOrNameFilter(field_name="pool_id", name_field="pool__name", help_text="Id or name.")
    cluster = IdOrNameFilter(field_name="pool__cluster_id", name_field="pool__cluster__name")

    class Meta:
        model = SharingPolicy
        fields = ["pool", "cluster", "mode"]


class SharingPolicyViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """A node pool's declared sharing mode. Nodes see nothing until it is published
    (POST /api/v1/policy-revisions/). Platform-admins only."""

    queryset = SharingPolicy.objects.select_related("pool__cluster")
    serializer_class = SharingPolicySerializer
    filterset_class = SharingPolicyFilter

    def get_queryset(self) -> QuerySet[SharingPolicy]:
        return super().get_queryset().order_by("pool__cluster__name", "pool__name")

    def _save(self, request: Request, instance: SharingPolicy | None, code: int) -> Response:
        require_platform_admin(self.actor, "declare sharing policies")
        serializer = self.get_serializer(instance, data=request.data, partial=instance is not None)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        pool = data.get("pool") or (instance.pool if instance else None)
        policy = set_sharing_policy(
            pool_id=pool.pk if pool else "",
            actor=self.actor,
            mode=data.get("mode", instance.mode if instance else ""),
            parameters=data.get("parameters", instance.parameters if instance else {}),
            resource_name=data.get("resource_name", instance.resource_name if instance else ""),
        )
        body = dict(self.get_serializer(self.get_queryset().get(pk=policy.pk)).data)
        # Saved all the same: a warning, not a refusal (publishing asks to confirm it).
        warning = agent_coverage(pool_id=policy.pool_id).warning
        body["warnings"] = [{"code": "policy.no_reporting_agent", "message": warning}] if warning else []
        return Response(body, status=code)

    def create(self, request: Request) -> Response:
        """Declare (or replace) a pool's sharing; refused whole with every problem's code."""
        return self._save(request, None, status.HTTP_201_CREATED)

    def partial_update(self, request: Request, pk: str) -> Response:
        return self._save(request, self.get_object(), status.HTTP_200_OK)

    @extend_schema(request=PreviewRequestSerializer, responses={200: dict})
    @action(detail=False, methods=["post"])
    def preview(self, request: Request) -> Response:
        """What a mode would give on a pool (changes nothing): the seed's five dimensions for it
        and for every other mode, the units it yields, and its problems."""
        require_platform_admin(self.actor, "preview sharing policies")
        serializer = PreviewRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        result = preview_policy(
            pool_id=data["pool"],
            mode=data["mode"],
            parameters=data["parameters"],
            resource_name=data["resource_name"],
        )
        body = {**result.data, "compare": [tradeoff(m).as_dict() for m in SharingMode]}
        return Response(body)
