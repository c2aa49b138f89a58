"""REST for the capacity catalogue: flavors, priority classes, quotas, budgets, queues."""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from gpuplatform.api.filters import FilterSet, IdOrNameFilter
from gpuplatform.api.serializers import StrictModelSerializer, StrictSerializer
from gpuplatform.api.viewsets import ScopedViewSet
from quotas.models import Budget, Flavor, PriorityClass, Queue, Quota
from quotas.models.catalogue import fraction_text
from quotas.runner.inputs import physical_free
from quotas.selectors import flavor_enforcement, quota_standing
from quotas.services import catalogue as catalogue_services
from quotas.services.advice import catalogue_warnings


class ScopedRelations:
    """Related-object choices pass through the scoping door: a foreign id reads as nonexistent."""

    def get_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = super().get_fields()  # type: ignore[misc]
        request = self.context.get("request")  # type: ignore[attr-defined]
        for field in fields.values():
            queryset = getattr(field, "queryset", None)
            if request is not None and queryset is not None and hasattr(queryset, "visible_to"):
                field.queryset = queryset.visible_to(request.user)
        return fields


class FlavorResourceSerializer(StrictSerializer):
    name = serializers.CharField(max_length=253)
    ge_per_unit = serializers.CharField(max_length=32, validators=[fraction_text])


class EnforcementSerializer(StrictSerializer):
    separately = serializers.BooleanField(help_text="The cluster can hold a tenant to this flavor alone.")
    reason = serializers.CharField(help_text="Why not, when it cannot; empty otherwise.")
    shared_with = serializers.ListField(child=serializers.CharField(), help_text="Flavors sharing its name.")


class FlavorSerializer(ScopedRelations, StrictModelSerializer):
    resources = FlavorResourceSerializer(many=True)
    pool_missing = serializers.SerializerMethodField()
    capacity = serializers.SerializerMethodField()
    enforcement = serializers.SerializerMethodField()

    class Meta:
        model = Flavor
        fields = [
            "id",
            "name",
            "display_name",
            "kind",
            "pool",
            "gpu_model",
            "resources",
            "device_class",
            "approval_above",
            "tenant",
            "pool_missing",
            "capacity",
            "enforcement",
            "created_at",
        ]
        read_only_fields = ["id", "created_at"]

    @extend_schema_field(EnforcementSerializer)
    def get_enforcement(self, flavor: Flavor) -> dict[str, Any]:
        """Whether the cluster enforces this flavor apart from others sharing its resource name."""
        known = self.context.get("enforcement")
        if known is None or flavor.pk not in known:
            request = self.context.get("request")
            user = getattr(request, "user", None)
            visible = Flavor.objects.visible_to(user) if user is not None else Flavor.objects.none()
            known = flavor_enforcement(flavors=[flavor], visible=visible)
        found = known[flavor.pk]
        return {
            "separately": found.separately,
            "reason": found.reason,
            "shared_with": list(found.shared_with),
        }

    def get_pool_missing(self, flavor: Flavor) -> bool:
        return flavor.pool_id is None

    def get_capacity(self, flavor: Flavor) -> dict[str, int]:
        """Free physical units per resource (pool capacity minus admitted requests)."""
        free = self.context.get("free") or physical_free([flavor])
        return dict(free.get(flavor.name, {}))


class PriorityClassSerializer(ScopedRelations, StrictModelSerializer):
    class Meta:
        model = PriorityClass
        fields = ["id", "name", "value", "preemptible", "description", "tenant", "created_at"]
        read_only_fields = ["id", "created_at"]


class QuotaStandingSerializer(StrictSerializer):
    used = serializers.IntegerField(help_text="Held now: admitted and active requests.")
    borrowed = serializers.IntegerField(help_text="Of what is used, taken from relatives' unused quota.")
    lent = serializers.IntegerField(help_text="Of this quota, held by relatives' requests.")
    available = serializers.IntegerField(help_text="Admissible at once: nominal - own use - lent.")


class QuotaSerializer(ScopedRelations, StrictModelSerializer):
    nominal = serializers.IntegerField(min_value=0)
    borrowing_limit = serializers.IntegerField(min_value=0, allow_null=True, required=False)
    lending_limit = serializers.IntegerField(min_value=0, allow_null=True, required=False)
    standing = serializers.SerializerMethodField()

    @extend_schema_field(QuotaStandingSerializer)
    def get_standing(self, quota: Quota) -> dict[str, int]:
        """Where this quota stands now (QuotaStanding), computed for the whole page at once on lists."""
        known = self.context.get("standing")
        if known is None or quota.pk not in known:
            known = quota_standing(quotas=[quota])
        found = known[quota.pk]
        return {
            "used": found.used,
            "borrowed": found.borrowed,
            "lent": found.lent,
            "available": found.available,
        }

    class Meta:
        model = Quota
        fields = [
            "id",
            "tenant",
            "flavor",
            "resource",
            "nominal",
            "borrowing_limit",
            "lending_limit",
            "standing",
            "updated_at",
        ]
        read_only_fields = ["id", "updated_at"]


class BudgetSerializer(ScopedRelations, StrictModelSerializer):
    limit_ge_hours = serializers.DecimalField(max_digits=14, decimal_places=3, min_value=0)

    class Meta:
        model = Budget
        fields = ["id", "tenant", "flavor", "limit_ge_hours", "hard", "updated_at"]
        read_only_fields = ["id", "updated_at"]


class QueueSerializer(ScopedRelations, StrictModelSerializer):
    """A queue, with Kueue's per-ClusterQueue `preemption` (within_tenant, reclaim_within_cohort,
    borrow_within_cohort with max_priority_threshold) and `flavorFungibility` (when_can_borrow,
    when_can_preempt) for the requests it holds."""

    class Meta:
        model = Queue
        fields = [
            "id",
            "tenant",
            "name",
            "strategy",
            "weight",
            "within_tenant",
            "reclaim_within_cohort",
            "borrow_within_cohort",
            "max_priority_threshold",
            "when_can_borrow",
            "when_can_preempt",
            "created_at",
        ]
        read_only_fields = ["id", "created_at"]


class TenantOwnedFilter(FilterSet):
    tenant = IdOrNameFilter(field_name="tenant_id", name_field="tenant__slug", help_text="Id or slug.")
    tenant_slug = django_filters.CharFilter(field_name="tenant__slug")


class QuotaFilter(TenantOwnedFilter):
    flavor = IdOrNameFilter(field_name="flavor_id", name_field="flavor__name", help_text="Id or name.")
    flavor_name = django_filters.CharFilter(field_name="flavor__name")

    class Meta:
        model = Quota
        fields = ["tenant", "tenant_slug", "flavor", "flavor_name", "resource"]


class BudgetFilter(TenantOwnedFilter):
    flavor = IdOrNameFilter(field_name="flavor_id", name_field="flavor__name", help_text="Id or name.")

    class Meta:
        model = Budget
        fields = ["tenant", "tenant_slug", "flavor", "hard"]


class QueueFilter(TenantOwnedFilter):
    class Meta:
        model = Queue
        fields = ["tenant", "tenant_slug", "name", "strategy"]


class FlavorFilter(FilterSet):
    class Meta:
        model = Flavor
        fields = ["name", "kind", "pool", "gpu_model"]


class PriorityClassFilter(FilterSet):
    class Meta:
        model = PriorityClass
        fields = ["name", "preemptible"]


class CatalogViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Create, change and delete through the catalogue services (rights and audit live there). A
    write answers the row with ``warnings``: valid values that are probably not meant (never a
    refusal; quotas.services.advice)."""

    model: type[Any]

    def _saved(self, obj: Any, **kwargs: Any) -> Response:
        warnings = catalogue_warnings(model=self.model, values={}, current=obj)
        return Response(
            {**self.get_serializer(obj).data, "warnings": [w.as_dict() for w in warnings]}, **kwargs
        )

    def create(self, request: Request) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        obj = catalogue_services.create_entry(actor=self.actor, model=self.model, **serializer.validated_data)
        return self._saved(obj, status=status.HTTP_201_CREATED)

    def update(self, request: Request, pk: str, partial: bool = False) -> Response:
        obj = self.get_object()
        serializer = self.get_serializer(obj, data=request.data, partial=partial)
        serializer.is_valid(raise_exception=True)
        obj = catalogue_services.update_entry(
            actor=self.actor, model=self.model, pk=obj.pk, **serializer.validated_data
        )
        return self._saved(obj)

    def partial_update(self, request: Request, pk: str) -> Response:
        return self.update(request, pk, partial=True)

    @extend_schema(responses={204: None})
    def destroy(self, request: Request, pk: str) -> Response:
        obj = self.get_object()
        catalogue_services.delete_entry(actor=self.actor, model=self.model, pk=obj.pk)
        return Response(status=status.HTTP_204_NO_CONTENT)


class FlavorViewSet(CatalogViewSet):
    """Kinds of capacity, with free physical capacity from inventory and a flag when the pool vanished."""

    model = Flavor
    queryset = Flavor.objects.select_related("pool")
    serializer_class = FlavorSerializer
    filterset_class = FlavorFilter

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        # Free capacity and enforcement of the whole page in a few queries, not a few per flavor.
        context = {
            **self.get_serializer_context(),
            "free": physical_free(page or []),
            "enforcement": flavor_enforcement(
                flavors=list(page or []), visible=Flavor.objects.visible_to(self.actor)
            ),
        }
        return self.get_paginated_response(FlavorSerializer(page, many=True, context=context).data)


class PriorityClassViewSet(CatalogViewSet):
    model = PriorityClass
    queryset = PriorityClass.objects.all()
    serializer_class = PriorityClassSerializer
    filterset_class = PriorityClassFilter


class QuotaViewSet(CatalogViewSet):
    model = Quota
    queryset = Quota.objects.select_related("tenant", "flavor")
    serializer_class = QuotaSerializer
    filterset_class = QuotaFilter

    def get_queryset(self) -> QuerySet[Any]:
        return super().get_queryset().order_by("tenant__path", "flavor__name", "resource")

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        context = {**self.get_serializer_context(), "standing": quota_standing(quotas=list(page or []))}
        return self.get_paginated_response(QuotaSerializer(page, many=True, context=context).data)


class BudgetViewSet(CatalogViewSet):
    model = Budget
    queryset = Budget.objects.all()
    serializer_class = BudgetSerializer
    filterset_class = BudgetFilter


class QueueViewSet(CatalogViewSet):
    model = Queue
    queryset = Queue.objects.all()
    serializer_class = QueueSerializer
    filterset_class = QueueFilter
