"""Inventory models: clusters and their sync state, the fleet, DRA objects and the allocation ledger."""

from inventory.models.clusters import (
    Cluster,
    EnforcementBackend,
    KueueApplyState,
    ParseIssueCount,
    SyncKind,
    SyncState,
)
from inventory.models.fleet import DeviceClass, Gpu, Node, NodePool, ResourceSlice, ShareableUnit, UnitKind
from inventory.models.ledger import Allocation, HolderKind, ResourceClaim
from inventory.models.workloads import Workload, WorkloadState

__all__ = [
    "Allocation",
    "Cluster",
    "DeviceClass",
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
]
