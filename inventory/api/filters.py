from __future__ import annotations

from datetime import datetime
from typing import Any

import django_filters
from django.db.models import Q, QuerySet

from gpuplatform.api.filters import FilterSet
from inventory.models import (
    Allocation,
    Gpu,
    HolderKind,
    Node,
    NodePool,
    ResourceClaim,
    Workload,
    WorkloadState,
)


class NodePoolFilter(FilterSet):
    cluster = django_filters.CharFilter(field_name="cluster__name")
    cluster_id = django_filters.UUIDFilter(field_name="cluster_id")
    tenant = django_filters.CharFilter(field_name="tenant__slug")
    q = django_filters.CharFilter(field_name="name", lookup_expr="icontains")

    class Meta:
        model = NodePool
        fields = ["cluster", "cluster_id", "tenant", "q"]


class NodeFilter(FilterSet):
    cluster = django_filters.CharFilter(field_name="cluster__name")
    pool = django_filters.UUIDFilter(field_name="pool_id")
    model = django_filters.CharFilter(field_name="model_key")
    present = django_filters.BooleanFilter()
    cordoned = django_filters.BooleanFilter()
    q = django_filters.CharFilter(field_name="name", lookup_expr="icontains")
    # The NVLink clique (nvidia.com/gpu.clique); "" = nodes on no NVLink fabric.
    nvlink_clique = django_filters.CharFilter()
    driver_managed_mig = django_filters.BooleanFilter()

    class Meta:
        model = Node
        fields = [
            "cluster",
            "pool",
            "model",
            "present",
            "cordoned",
            "q",
            "nvlink_clique",
            "driver_managed_mig",
        ]


class GpuFilter(FilterSet):
    cluster = django_filters.CharFilter(field_name="node__cluster__name")
    node = django_filters.CharFilter(field_name="node__name")
    pool = django_filters.UUIDFilter(field_name="node__pool_id")
    model = django_filters.CharFilter(field_name="model_key")
    mig_enabled = django_filters.BooleanFilter()

    class Meta:
        model = Gpu
        fields = ["cluster", "node", "pool", "model", "mig_enabled"]


class ResourceClaimFilter(FilterSet):
    cluster = django_filters.CharFilter(field_name="cluster__name")
    tenant = django_filters.CharFilter(field_name="tenant__slug")
    tenant_id = django_filters.UUIDFilter(field_name="tenant_id")
    namespace = django_filters.CharFilter()
    state = django_filters.CharFilter()
    present = django_filters.BooleanFilter()

    class Meta:
        model = ResourceClaim
        fields = ["cluster", "tenant", "tenant_id", "namespace", "state", "present"]


class AllocationFilter(FilterSet):
    cluster = django_filters.CharFilter(field_name="cluster__name")
    tenant = django_filters.CharFilter(method="filter_tenant", label="Tenant slug, or 'unassigned'")
    tenant_id = django_filters.UUIDFilter(field_name="tenant_id")
    pool = django_filters.UUIDFilter(field_name="pool_id")
    namespace = django_filters.CharFilter()
    holder_kind = django_filters.ChoiceFilter(choices=HolderKind.choices)
    resource = django_filters.CharFilter(field_name="resource_name")
    open = django_filters.BooleanFilter(field_name="ended_at", lookup_expr="isnull")
    since = django_filters.IsoDateTimeFilter(method="filter_since", label="Held at or after (ISO 8601)")
    until = django_filters.IsoDateTimeFilter(method="filter_until", label="Held before (ISO 8601)")

    class Meta:
        model = Allocation
        fields = ["cluster", "tenant", "tenant_id", "pool", "namespace", "holder_kind", "resource", "open"]

    def filter_tenant(self, queryset: QuerySet[Any], name: str, value: str) -> QuerySet[Any]:
        if value == "unassigned":
            return queryset.filter(tenant__isnull=True)
        return queryset.filter(tenant__slug=value)

    # A time range selects intervals that overlap it, so a long-running allocation is not missed.
    def filter_since(self, queryset: QuerySet[Any], name: str, value: datetime) -> QuerySet[Any]:
        return queryset.filter(Q(ended_at__isnull=True) | Q(ended_at__gt=value))

    def filter_until(self, queryset: QuerySet[Any], name: str, value: datetime) -> QuerySet[Any]:
        return queryset.filter(started_at__lt=value)


class WorkloadFilter(FilterSet):
    cluster = django_filters.CharFilter(field_name="cluster__name")
    tenant = django_filters.CharFilter(method="filter_tenant", label="Tenant slug, or 'unattributed'")
    namespace = django_filters.CharFilter()
    state = django_filters.ChoiceFilter(choices=WorkloadState.choices)
    present = django_filters.BooleanFilter()

    class Meta:
        model = Workload
        fields = ["cluster", "tenant", "namespace", "state", "present"]

    def filter_tenant(self, queryset: QuerySet[Any], name: str, value: str) -> QuerySet[Any]:
        if value == "unattributed":
            return queryset.filter(tenant__isnull=True)
        return queryset.filter(tenant__slug=value)
