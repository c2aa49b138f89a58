"""The fleet as the cluster reports it: pools, nodes, GPUs, shareable units, DRA classes and slices."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from inventory.domain.gpu_equivalent import STORED_GE_PLACES
from inventory.scoping import NodePoolQuerySet, PlatformOnlyQuerySet

GE_PLACES = STORED_GE_PLACES  # exact GE can be read back (inventory/domain/gpu_equivalent.py)
GE_DIGITS = GE_PLACES + 6


class UnitKind(models.TextChoices):
    WHOLE_GPU = "whole_gpu", "Whole GPU"
    MIG_INSTANCE = "mig_instance", "MIG instance"
    TIME_SLICE_REPLICA = "time_slice_replica", "Time-slicing replica"
    MPS_REPLICA = "mps_replica", "MPS replica"
    HAMI_GPU = "hami_gpu", "HAMi-shared GPU"
    DRA_DEVICE = "dra_device", "DRA device"


class NodePool(models.Model):
    """Nodes sharing the cluster's pool label value. A platform-admin may dedicate a pool to one
    tenant; otherwise (tenant NULL) its free capacity is visible to every tenant."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.CASCADE, related_name="pools")
    name = models.CharField(max_length=253)
    tenant = models.ForeignKey(
        "tenants.Tenant", on_delete=models.SET_NULL, null=True, blank=True, related_name="dedicated_pools"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = NodePoolQuerySet.as_manager()

    class Meta:
        ordering = ["cluster__name", "name"]
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="pool_name_per_cluster")]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.name}"


class Node(models.Model):
    """A node as last seen. A node that vanished stays (present=False, gone_at) with no units."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.CASCADE, related_name="nodes")
    pool = models.ForeignKey(NodePool, on_delete=models.SET_NULL, null=True, blank=True, related_name="nodes")
    name = models.CharField(max_length=253)
    uid = models.CharField(max_length=64, blank=True)
    labels = models.JSONField(default=dict)
    taints = models.JSONField(default=list)
    capacity = models.JSONField(default=dict)
    allocatable = models.JSONField(default=dict)
    conditions = models.JSONField(default=dict)
    ready = models.BooleanField(default=False)
    cordoned = models.BooleanField(default=False)
    product = models.CharField(max_length=200, blank=True)
    model_key = models.CharField(max_length=100, blank=True)
    mig_strategy = models.CharField(max_length=16, blank=True)
    sharing_strategy = models.CharField(max_length=32, blank=True)
    replicas = models.PositiveIntegerField(default=1)
    gpu_count = models.PositiveIntegerField(default=0)  # physical cards (inventory/domain/cards.py)
    # "reported" (the cluster said), "inferred" (worked out from MIG device counts) or "unknown"
    card_basis = models.CharField(max_length=16, blank=True)
    card_source = models.CharField(max_length=200, blank=True)
    # This node's parse issues as last read ({severity, code, message, source}); the cluster's
    # ParseIssueCount only keeps the last object per code, the node page needs its own.
    parse_issues = models.JSONField(default=list, blank=True)
    # The NVLink clique (nvidia.com/gpu.clique, inventory/domain/node_topology.py): "" = no NVLink
    # fabric. Pages group nodes by it; ``topology`` holds the zone/rack labels INVENTORY_TOPOLOGY_LABELS
    # names, as the node carries them.
    nvlink_clique = models.CharField(max_length=63, blank=True, db_index=True)
    topology = models.JSONField(default=dict, blank=True)
    # The NVIDIA DRA driver owns this node's MIG layout (DynamicMIG, inventory/domain/mig_management.py);
    # set by the slice sync, so a node event leaves it as it is.
    driver_managed_mig = models.BooleanField(default=False)
    present = models.BooleanField(default=True)
    gone_at = models.DateTimeField(null=True, blank=True)
    content_hash = models.CharField(max_length=64, blank=True, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["cluster__name", "name"]
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="node_name_per_cluster")]

    def __str__(self) -> str:
        return self.name


class Gpu(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="gpus")
    index = models.PositiveIntegerField()
    uuid = models.CharField(max_length=100, blank=True)
    product = models.CharField(max_length=200, blank=True)
    model_key = models.CharField(max_length=100, blank=True)
    memory_mib = models.PositiveIntegerField(null=True, blank=True)
    mig_enabled = models.BooleanField(default=False)
    healthy = models.BooleanField(default=True)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["node__name", "index"]
        constraints = [models.UniqueConstraint(fields=["node", "index"], name="gpu_index_per_node")]

    def __str__(self) -> str:
        return f"{self.node.name}/gpu{self.index}"


class ResourceSlice(models.Model):
    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.CASCADE, related_name="resource_slices")
    name = models.CharField(max_length=253)
    driver = models.CharField(max_length=253)
    pool_name = models.CharField(max_length=253)
    generation = models.BigIntegerField(default=0)
    slice_count = models.PositiveIntegerField(default=1)
    node_name = models.CharField(max_length=253, blank=True)
    # It announces MIG placements the driver creates per claim (DynamicMIG).
    dynamic_mig = models.BooleanField(default=False)
    # Counter names it declares and its devices consume (dra_devices.counter_names): whether every
    # consumed counter is declared is only known once the pool's whole generation is seen.
    counters = models.JSONField(default=dict, blank=True)
    content_hash = models.CharField(max_length=64, blank=True, editable=False)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["driver", "pool_name", "name"]
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="slice_name_per_cluster")]
        indexes = [models.Index(fields=["cluster", "driver", "pool_name"])]

    def __str__(self) -> str:
        return self.name


class ShareableUnit(models.Model):
    """A group of identical units a pod or claim can be given (DESIGN §3), with the GE of each.

    Device-plugin units come from the node and group identical replicas (``count``); a DRA device is
    one unit per device and counts only once its pool's newest generation is complete (``counted``).
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.CASCADE, related_name="units")
    node = models.ForeignKey(Node, on_delete=models.CASCADE, null=True, blank=True, related_name="units")
    gpu = models.ForeignKey(Gpu, on_delete=models.SET_NULL, null=True, blank=True, related_name="units")
    resource_slice = models.ForeignKey(
        ResourceSlice, on_delete=models.CASCADE, null=True, blank=True, related_name="devices"
    )
    key = models.CharField(max_length=600)
    kind = models.CharField(max_length=32, choices=UnitKind.choices)
    resource_name = models.CharField(max_length=253)
    count = models.PositiveIntegerField(default=1)
    ge_each = models.DecimalField(max_digits=GE_DIGITS, decimal_places=GE_PLACES)
    model_key = models.CharField(max_length=100, blank=True)
    memory_mib = models.PositiveIntegerField(null=True, blank=True)
    mig_profile = models.CharField(max_length=32, blank=True)
    placement_start = models.PositiveSmallIntegerField(null=True, blank=True)
    placement_size = models.PositiveSmallIntegerField(null=True, blank=True)
    split_count = models.PositiveIntegerField(null=True, blank=True)
    device_uuid = models.CharField(max_length=100, blank=True)
    driver = models.CharField(max_length=253, blank=True)
    pool_name = models.CharField(max_length=253, blank=True)
    device_name = models.CharField(max_length=253, blank=True)
    attributes = models.JSONField(default=dict, blank=True)
    counted = models.BooleanField(default=True)
    # DRA device taints as last read (device_taints.DeviceTaint.as_json), from the slice and from
    # DeviceTaintRules, unknown effects included: the node page lists them.
    taints = models.JSONField(default=list, blank=True)
    # Why the unit is not free capacity though counted ("tainted by gpu.nvidia.com/xid=79:NoSchedule",
    # "cordoned by HAMi (hami.io/device-cordon)"); "" when it may be handed out.
    unavailable = models.CharField(max_length=300, blank=True)
    # A DRA device shared by several claims (allowMultipleAllocations, KEP-5075): its capacities and
    # request policies (dra_capacity.shared_capacity_json); {} for a device one claim takes whole.
    shared_capacity = models.JSONField(default=dict, blank=True)
    # A DRA device with `bindsToNode` (KEP-5007): its allocation pins the claim to the node the pod is
    # scheduled on, even where the slice offers the device to several nodes.
    binds_to_node = models.BooleanField(default=False)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["key"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "key"], name="unit_key_per_cluster"),
            models.CheckConstraint(condition=models.Q(ge_each__gte=0), name="unit_ge_not_negative"),
        ]
        indexes = [models.Index(fields=["cluster", "driver", "pool_name", "device_name"])]

    def __str__(self) -> str:
        return self.key


class DeviceClass(models.Model):
    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.CASCADE, related_name="device_classes")
    name = models.CharField(max_length=253)
    driver = models.CharField(max_length=253, blank=True)
    selectors = models.JSONField(default=list)
    extended_resource_name = models.CharField(max_length=253, blank=True)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="device_class_per_cluster")]

    def __str__(self) -> str:
        return self.name


class DeviceTaintRule(models.Model):
    """A DeviceTaintRule as last read: one taint for the devices its selector names (driver, pool,
    device; all unset matches every device, no selector none). Units carry the taint with source
    "DeviceTaintRule <name>" (inventory/sync/taint_rules.py)."""

    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.CASCADE, related_name="taint_rules")
    name = models.CharField(max_length=253)
    has_selector = models.BooleanField(default=False)
    driver = models.CharField(max_length=253, blank=True)
    pool_name = models.CharField(max_length=253, blank=True)
    device_name = models.CharField(max_length=253, blank=True)
    taint = models.JSONField(default=dict)  # device_taints.DeviceTaint.as_json()
    content_hash = models.CharField(max_length=64, blank=True, editable=False)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="taint_rule_per_cluster")]

    def __str__(self) -> str:
        return self.name
