from __future__ import annotations

from decimal import Decimal
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from gpuplatform.api.serializers import StrictModelSerializer, StrictSerializer
from inventory.capacity import ModelCapacity
from inventory.models import (
    Allocation,
    Cluster,
    EnforcementBackend,
    Gpu,
    Node,
    NodePool,
    ResourceClaim,
    SyncState,
    Workload,
)
from tenants.models import dns_label


class SyncStateSerializer(serializers.ModelSerializer[SyncState]):
    healthy = serializers.BooleanField(read_only=True)

    class Meta:
        model = SyncState
        fields = [
            "kind",
            "resource_version",
            "last_list_at",
            "last_success_at",
            "last_event_at",
            "last_error",
            "last_error_at",
            "lag_seconds",
            "relists",
            "events",
            "objects_seen",
            "healthy",
        ]


class ClusterSerializer(StrictModelSerializer):
    name = serializers.CharField(max_length=63, validators=[dns_label])
    kubeconfig = serializers.CharField(
        write_only=True, required=False, allow_blank=True, max_length=200_000, trim_whitespace=False
    )
    sync_states = SyncStateSerializer(many=True, read_only=True)
    parse_issue_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Cluster
        fields = [
            "id",
            "name",
            "api_endpoint",
            "in_cluster",
            "pool_label",
            "enforcement_backend",
            "kubeconfig",
            "sync_states",
            "parse_issue_count",
            "last_full_resync_at",
            "last_drift",
            "total_drift",
            "created_at",
            "updated_at",
        ]
        read_only_fields = [
            "id",
            "api_endpoint",
            "last_full_resync_at",
            "last_drift",
            "total_drift",
            "created_at",
            "updated_at",
        ]


class ClusterUpdateSerializer(StrictSerializer):
    kubeconfig = serializers.CharField(required=False, max_length=200_000)
    in_cluster = serializers.BooleanField(required=False)
    pool_label = serializers.CharField(required=False, max_length=253)
    enforcement_backend = serializers.ChoiceField(choices=EnforcementBackend.choices, required=False)


def _ge() -> serializers.DecimalField:
    return serializers.DecimalField(max_digits=14, decimal_places=6)


class KindUnitsSerializer(StrictSerializer):
    kind = serializers.CharField()
    units = serializers.IntegerField()
    ge = _ge()


class PhysicalCapacitySerializer(StrictSerializer):
    """Cards: 1 GE each, whatever their partitioning."""

    cards = serializers.IntegerField()
    capacity_ge = _ge()
    allocated_ge = _ge()
    unavailable_ge = _ge()  # tainted (NoSchedule/NoExecute) or cordoned, and not held
    free_ge = _ge()


class AdvertisedCapacitySerializer(StrictSerializer):
    """The units the nodes offer and their GE, which can sum above or below the cards."""

    units = serializers.IntegerField()
    capacity_ge = _ge()
    allocated_ge = _ge()
    unavailable_ge = _ge()
    free_ge = _ge()
    kinds = KindUnitsSerializer(many=True)


class CapacitySerializer(StrictSerializer):
    """One GPU model of a pool, physical and advertised side by side (inventory/capacity.py)."""

    model_key = serializers.CharField()
    physical = PhysicalCapacitySerializer()
    advertised = AdvertisedCapacitySerializer()
    unavailable = serializers.ListField(
        child=serializers.CharField(), help_text="Why capacity is not free: '1 GPU tainted by ...'."
    )


def capacity_rows(rows: list[ModelCapacity]) -> list[dict[str, Any]]:
    return [
        CapacitySerializer(
            {
                "model_key": row.model_key,
                "physical": {
                    "cards": row.cards,
                    "capacity_ge": row.physical_ge,
                    "allocated_ge": row.allocated_ge,
                    "unavailable_ge": row.unavailable_ge,
                    "free_ge": row.free_ge,
                },
                "advertised": {
                    "units": row.advertised_units,
                    "capacity_ge": row.advertised_ge,
                    "allocated_ge": row.advertised_allocated_ge,
                    "unavailable_ge": row.advertised_unavailable_ge,
                    "free_ge": row.advertised_free_ge,
                    "kinds": row.kinds,
                },
                "unavailable": list(row.unavailable),
            }
        ).data
        for row in rows
    ]


class CliqueSerializer(StrictSerializer):
    """The pool's present nodes in one NVLink clique (nvidia.com/gpu.clique); null = on no fabric."""

    nvlink_clique = serializers.CharField(allow_null=True)
    nvlink_domain = serializers.CharField(allow_null=True)
    clique_id = serializers.IntegerField(allow_null=True)
    nodes = serializers.IntegerField()
    cards = serializers.IntegerField()
    driver_managed_mig_nodes = serializers.IntegerField()


class NodePoolSerializer(StrictModelSerializer):
    cluster = serializers.CharField(source="cluster.name", read_only=True)
    tenant = serializers.CharField(source="tenant.slug", read_only=True, allow_null=True)
    tenant_id = serializers.UUIDField(write_only=True, allow_null=True)
    node_count = serializers.IntegerField(read_only=True)
    capacity = serializers.SerializerMethodField()
    nvlink_cliques = serializers.SerializerMethodField()

    class Meta:
        model = NodePool
        fields = ["id", "cluster", "name", "tenant", "tenant_id", "node_count", "capacity", "nvlink_cliques"]
        read_only_fields = ["id", "name"]

    @extend_schema_field(CapacitySerializer(many=True))
    def get_capacity(self, pool: NodePool) -> list[dict[str, Any]]:
        return capacity_rows(self.context.get("capacity", {}).get(pool.pk, []))

    @extend_schema_field(CliqueSerializer(many=True))
    def get_nvlink_cliques(self, pool: NodePool) -> list[dict[str, Any]]:
        return [c.as_dict() for c in self.context.get("cliques", {}).get(pool.pk, [])]


class ModelFragmentationSerializer(StrictSerializer):
    cards = serializers.IntegerField()
    free_ge = serializers.DecimalField(max_digits=14, decimal_places=6)
    usable_ge = serializers.DecimalField(max_digits=14, decimal_places=6)
    stranded_ge = serializers.DecimalField(max_digits=14, decimal_places=6)
    unavailable_ge = serializers.DecimalField(max_digits=14, decimal_places=6)
    unavailable = serializers.ListField(child=serializers.CharField())


class FragmentationSerializer(StrictSerializer):
    """A pool's combinational fragmentation (read-only; computed, not stored)."""

    pool = serializers.UUIDField()
    cluster = serializers.CharField()
    name = serializers.CharField()
    demand = serializers.ListField(child=serializers.CharField())
    node_count = serializers.IntegerField()
    gpu_count = serializers.IntegerField()
    stranded_gpu_count = serializers.IntegerField()
    by_model = serializers.DictField(child=ModelFragmentationSerializer())


class SliceIssueSerializer(StrictSerializer):
    """An issue the sync found in one of the node's ResourceSlices taken with the rest of its pool."""

    severity = serializers.CharField()
    code = serializers.CharField(help_text="dra.counters.undeclared_set, dra.counters.undeclared_counter")
    message = serializers.CharField()
    source = serializers.CharField(help_text="'<slice>: <device>'")  # type: ignore[assignment]


class NodeSerializer(serializers.ModelSerializer[Node]):
    cluster = serializers.CharField(source="cluster.name")
    pool = serializers.UUIDField(source="pool_id")
    pool_name = serializers.CharField(source="pool.name", default=None)
    # Physical (cards, 1 GE each) beside what the node advertises on them.
    physical_ge = serializers.IntegerField(source="gpu_count", read_only=True)
    advertised_units = serializers.IntegerField(read_only=True, default=0)
    advertised_ge = serializers.DecimalField(
        max_digits=14, decimal_places=6, read_only=True, default=Decimal(0)
    )
    # Counters a device consumes that its pool does not declare (KEP-4815), as the node page lists
    # them under "Parse issues": read for the whole page by the view (context "slice_issues").
    slice_issues = serializers.SerializerMethodField()

    class Meta:
        model = Node
        fields = [
            "id",
            "cluster",
            "pool",
            "pool_name",
            "name",
            "uid",
            "labels",
            "taints",
            "capacity",
            "allocatable",
            "conditions",
            "ready",
            "cordoned",
            "product",
            "model_key",
            "mig_strategy",
            "sharing_strategy",
            "replicas",
            "gpu_count",
            "card_basis",
            "card_source",
            "physical_ge",
            "advertised_units",
            "advertised_ge",
            "parse_issues",
            "slice_issues",
            "nvlink_clique",
            "topology",
            "driver_managed_mig",
            "present",
            "gone_at",
            "updated_at",
        ]

    @extend_schema_field(SliceIssueSerializer(many=True))
    def get_slice_issues(self, node: Node) -> list[dict[str, str]]:
        return list(self.context.get("slice_issues", {}).get(node.pk, []))


class GpuSerializer(serializers.ModelSerializer[Gpu]):
    node = serializers.CharField(source="node.name")
    cluster = serializers.CharField(source="node.cluster.name")

    class Meta:
        model = Gpu
        fields = [
            "id",
            "cluster",
            "node",
            "index",
            "uuid",
            "product",
            "model_key",
            "memory_mib",
            "mig_enabled",
            "healthy",
        ]


class ResourceClaimSerializer(serializers.ModelSerializer[ResourceClaim]):
    cluster = serializers.CharField(source="cluster.name")
    tenant = serializers.CharField(source="tenant.slug", default=None)

    class Meta:
        model = ResourceClaim
        fields = [
            "id",
            "cluster",
            "tenant",
            "namespace",
            "name",
            "uid",
            "state",
            "requests",
            "results",
            "reserved_for",
            "node_name",
            "deleting",
            "issues",
            "created_at",
            "present",
            "gone_at",
        ]


class AllocationSerializer(serializers.ModelSerializer[Allocation]):
    cluster = serializers.CharField(source="cluster.name")
    tenant = serializers.CharField(source="tenant.slug", default=None)
    pool = serializers.UUIDField(source="pool_id")
    ge = _ge()  # six places for people; stored to 18 so the ledger reads the exact fraction back
    # A DRA claim's binding conditions for the device in words (KEP-5007); "" when it has none.
    binding = serializers.CharField(read_only=True)

    class Meta:
        model = Allocation
        fields = [
            "id",
            "cluster",
            "tenant",
            "namespace",
            "holder_kind",
            "holder_name",
            "holder_uid",
            "unit_key",
            "resource_name",
            "count",
            "ge",
            "model_key",
            "details",
            "node_name",
            "pool",
            "started_at",
            "ended_at",
            "end_reason",
            "binding",
        ]


class WorkloadSerializer(serializers.ModelSerializer[Workload]):
    """A Kueue Workload as the tenant sees it: ``explanation`` says where it stands in plain words;
    ``reason`` and ``message`` are Kueue's own. ``tenant`` null: unattributed (its LocalQueue is not
    one gpuplatform manages)."""

    cluster = serializers.CharField(source="cluster.name")
    tenant = serializers.CharField(source="tenant.slug", default=None)

    class Meta:
        model = Workload
        fields = [
            "id",
            "cluster",
            "tenant",
            "namespace",
            "name",
            "queue_name",
            "cluster_queue",
            "priority_class",
            "priority",
            "max_execution_seconds",
            "active",
            "pod_sets",
            "flavors",
            "state",
            "reason",
            "message",
            "explanation",
            "admission_checks",
            "conditions",
            "created_in_cluster",
            "present",
            "gone_at",
            "updated_at",
        ]
