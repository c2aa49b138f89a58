from __future__ import annotations

from typing import Any

from django.db.models import Count, F, Q, QuerySet, Sum
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status
from rest_framework.request import Request
from rest_framework.response import Response

from gpuplatform.api.viewsets import ScopedViewSet
from gpuplatform.errors import Forbidden
from inventory import selectors, services
from inventory.api import filters
from inventory.api.serializers import (
    AllocationSerializer,
    ClusterSerializer,
    ClusterUpdateSerializer,
    FragmentationSerializer,
    GpuSerializer,
    NodePoolSerializer,
    NodeSerializer,
    ResourceClaimSerializer,
    WorkloadSerializer,
)
from inventory.capacity import pool_model_capacity
from inventory.models import (
    Allocation,
    Cluster,
    EnforcementBackend,
    Gpu,
    Node,
    NodePool,
    ResourceClaim,
    Workload,
)
from inventory.topology import pool_cliques

ReadOnly = (mixins.ListModelMixin, mixins.RetrieveModelMixin)


class ClusterViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Clusters and their sync health. Platform-admins register, change and remove them."""

    queryset = Cluster.objects.all()
    serializer_class = ClusterSerializer

    def get_queryset(self) -> QuerySet[Cluster]:
        return (
            super()
            .get_queryset()
            .annotate(parse_issue_count=Sum("parse_issues__count"))
            .prefetch_related("sync_states")
            .order_by("name")
        )

    def _respond(self, cluster: Cluster, code: int = status.HTTP_200_OK) -> Response:
        return Response(self.get_serializer(self.get_queryset().get(pk=cluster.pk)).data, status=code)

    def create(self, request: Request) -> Response:
        if not self.actor.is_platform_admin:
            raise Forbidden("Only platform-admins manage clusters.")
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        cluster = services.create_cluster(
            actor=self.actor,
            name=data["name"],
            kubeconfig=data.get("kubeconfig", ""),
            in_cluster=data.get("in_cluster", False),
            pool_label=data.get("pool_label", ""),
            enforcement_backend=data.get("enforcement_backend", EnforcementBackend.RESOURCEQUOTA),
        )
        return self._respond(cluster, status.HTTP_201_CREATED)

    @extend_schema(request=ClusterUpdateSerializer, responses=ClusterSerializer)
    def partial_update(self, request: Request, pk: str) -> Response:
        cluster = self.get_object()
        serializer = ClusterUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        cluster = services.update_cluster(
            actor=self.actor, cluster_id=cluster.pk, **serializer.validated_data
        )
        return self._respond(cluster)

    @extend_schema(responses={204: None})
    def destroy(self, request: Request, pk: str) -> Response:
        cluster = self.get_object()
        services.delete_cluster(actor=self.actor, cluster_id=cluster.pk)
        return Response(status=status.HTTP_204_NO_CONTENT)


class NodePoolViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Node pools with, per GPU model, physical capacity (cards) and advertised capacity (units and
    their GE) side by side, each with allocated and free GE. Tenants see shared pools and
    those dedicated to them; platform-admins dedicate a pool with PATCH {"tenant_id": ...}."""

    queryset = NodePool.objects.select_related("cluster", "tenant")
    serializer_class = NodePoolSerializer
    filterset_class = filters.NodePoolFilter

    def get_queryset(self) -> QuerySet[NodePool]:
        present = Count("nodes", filter=Q(nodes__present=True))
        return super().get_queryset().annotate(node_count=present).order_by("cluster__name", "name")

    def get_serializer_context(self) -> dict[str, Any]:
        context = dict(super().get_serializer_context())
        context["capacity"] = getattr(self, "_capacity", {})
        context["cliques"] = getattr(self, "_cliques", {})
        return context

    def paginate_queryset(self, queryset: Any) -> Any:
        page = super().paginate_queryset(queryset)
        # One capacity query and one clique query for the whole page, not one per pool.
        ids = [p.pk for p in page or []]
        self._capacity = pool_model_capacity(pool_ids=ids)
        self._cliques = pool_cliques(pool_ids=ids)
        return page

    def retrieve(self, request: Request, pk: str) -> Response:
        pool = self.get_object()
        self._capacity = pool_model_capacity(pool_ids=[pool.pk])
        self._cliques = pool_cliques(pool_ids=[pool.pk])
        return Response(self.get_serializer(pool).data)

    @extend_schema(request=NodePoolSerializer, responses=NodePoolSerializer)
    def partial_update(self, request: Request, pk: str) -> Response:
        pool = self.get_object()
        serializer = self.get_serializer(pool, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        services.dedicate_pool(
            actor=self.actor, pool_id=pool.pk, tenant_id=serializer.validated_data.get("tenant_id")
        )
        return self.retrieve(request, pk)


class NodeViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Nodes (platform roles only), with their cards (physical GE) beside the units they advertise."""

    # The aggregate's GROUP BY drops Meta.ordering, and pages need a fixed order.
    queryset = (
        Node.objects.select_related("cluster", "pool")
        .annotate(
            advertised_units=Sum("units__count", filter=Q(units__counted=True)),
            advertised_ge=Sum(F("units__ge_each") * F("units__count"), filter=Q(units__counted=True)),
        )
        .order_by("cluster__name", "name")
    )
    serializer_class = NodeSerializer
    filterset_class = filters.NodeFilter

    def get_serializer_context(self) -> dict[str, Any]:
        return {**super().get_serializer_context(), "slice_issues": getattr(self, "_slice_issues", {})}

    def paginate_queryset(self, queryset: Any) -> Any:
        page = super().paginate_queryset(queryset)
        # The page's slice issues in one query, not one per node.
        self._slice_issues = selectors.nodes_slice_issues(nodes=page or [])
        return page

    def retrieve(self, request: Request, pk: str) -> Response:
        node = self.get_object()
        self._slice_issues = selectors.nodes_slice_issues(nodes=[node])
        return Response(self.get_serializer(node).data)


class GpuViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Physical GPUs (platform roles only)."""

    queryset = Gpu.objects.select_related("node", "node__cluster")
    serializer_class = GpuSerializer
    filterset_class = filters.GpuFilter


class ResourceClaimViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """DRA ResourceClaims; a tenant sees its own namespaces' claims."""

    queryset = ResourceClaim.objects.select_related("cluster", "tenant")
    serializer_class = ResourceClaimSerializer
    filterset_class = filters.ResourceClaimFilter


class AllocationViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """The allocation ledger; filter by tenant (slug or 'unassigned'), pool, time range (since/until)."""

    queryset = Allocation.objects.select_related("cluster", "tenant", "claim")
    serializer_class = AllocationSerializer
    filterset_class = filters.AllocationFilter


class FragmentationViewSet(mixins.ListModelMixin, ScopedViewSet):
    """Per visible pool: free, usable and stranded GE for the demanded profiles
    (``?demand=1g.10gb,3g.40gb``; default whole GPUs and every profile the pool offers)."""

    queryset = NodePool.objects.select_related("cluster")
    serializer_class = FragmentationSerializer
    filterset_class = filters.NodePoolFilter
    list_params = ("demand",)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "demand", str, description="Comma-separated MIG profiles, or 'whole' for whole GPUs"
            )
        ]
    )
    def list(self, request: Request) -> Response:
        queryset = self.filter_queryset(self.get_queryset()).order_by("cluster__name", "name")
        page = self.paginate_queryset(queryset) or []
        demand = [d for d in request.query_params.get("demand", "").split(",") if d] or None
        reports = selectors.pools_fragmentation(pools=list(page), demand=demand)
        results = [
            {"pool": str(pool.pk), "cluster": pool.cluster.name, "name": pool.name, **reports[pool.pk]}
            for pool in page
        ]
        return self.get_paginated_response(results)


class WorkloadViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Kueue Workloads synced from kueue clusters, newest first; a tenant sees its subtree's,
    platform staff also the unattributed ones. Filter by tenant (slug or 'unattributed'), state."""

    queryset = Workload.objects.select_related("cluster", "tenant")
    serializer_class = WorkloadSerializer
    filterset_class = filters.WorkloadFilter
