"""Inventory models: clusters and their sync state, the fleet, DRA objects and the allocation ledger."""

from inventory.models.clusters import (
    Cluster,
    EnforcementBackend,
    KueueApplyState,
    ParseIssueCount,
    SyncKind,
    SyncState,
    sync_heartbeat_name,
)
from inventory.models.fleet import (
    DeviceClass,
    DeviceTaintRule,
    Gpu,
    Node,
    NodePool,
    ResourceSlice,
    ShareableUnit,
    UnitKind,
)
from inventory.models.ledger import Allocation, ChangedHours, HolderKind, ResourceClaim
from inventory.models.workloads import Workload, WorkloadState

__all__ = [
    "Allocation",
    "ChangedHours",
    "Cluster",
    "DeviceClass",
    "DeviceTaintRule",
    "EnforcementBackend",
    "Gpu",
    "HolderKind",
    "KueueApplyState",
    "Node",
    "NodePool",
    "ParseIssueCount",
    "ResourceClaim",
    "ResourceSlice",
    "ShareableUnit",
    "SyncKind",
    "SyncState",
    "UnitKind",
    "Workload",
    "WorkloadState",
    "sync_heartbeat_name",
]
