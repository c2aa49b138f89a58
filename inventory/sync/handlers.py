"""One entry point per kind for lists (pages, then reconcile) and watch batches."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inventory.domain.raw_fields import dig
from inventory.models import HolderKind, ResourceClaim, ResourceSlice, SyncKind
from inventory.sync import dra, nodes, pods, taint_rules, workloads
from inventory.sync.context import SyncContext
from inventory.sync.ledger import open_holder_uids


def object_key(kind: str, obj: dict[str, Any]) -> str:
    """An object's identity in a list's reconcile: uids for holders and Workloads (never reused),
    names for nodes, slices, classes and rules (what their rows are keyed by)."""
    field_name = "uid" if kind in (SyncKind.PODS, SyncKind.RESOURCE_CLAIMS, SyncKind.WORKLOADS) else "name"
    return str(dig(obj, "metadata", field_name) or "")


@dataclass
class ListState:
    """Keys seen so far in a list of one kind, to find what vanished once the last page is in."""

    seen: set[str] = field(default_factory=set)


def apply_upserts(ctx: SyncContext, kind: str, objects: list[dict[str, Any]], *, listing: bool) -> int:
    reason = "resync" if listing else "changed"
    if kind in (SyncKind.NODES, SyncKind.RESOURCE_SLICES):
        # The units cached for pods and claims go only when a node or slice changed (its units
        # rebuilt): a resync's unchanged pages of them dropped the caches every part, and each watch
        # batch between the parts read its nodes' units again (whole DRA device map, seconds at
        # 5,000 nodes, for the claims list's first part).
        apply = nodes.apply_nodes if kind == SyncKind.NODES else dra.apply_slices
        changes = apply(ctx, objects)
        if changes:
            ctx.units_changed()
        return changes
    if kind == SyncKind.PODS:
        return pods.apply_pods(ctx, objects, reason=reason, listing=listing)[0]
    if kind == SyncKind.DEVICE_CLASSES:
        return dra.apply_device_classes(ctx, objects)
    if kind == SyncKind.WORKLOADS:
        return workloads.apply_workloads(ctx, objects)
    if kind == SyncKind.DEVICE_TAINT_RULES:
        return taint_rules.apply_rules(ctx, objects)
    return dra.apply_claims(ctx, objects, reason=reason, listing=listing)[0]


def apply_deletes(ctx: SyncContext, kind: str, objects: list[dict[str, Any]]) -> int:
    if kind == SyncKind.PODS:
        return pods.delete_pods(ctx, objects)  # the deleted pod's last state closes its intervals
    return close_vanished(ctx, kind, {object_key(kind, o) for o in objects} - {""}, reason="deleted")


def finish_list(ctx: SyncContext, kind: str, state: ListState) -> int:
    """After the last page: what we hold that the list no longer has is closed (not forgotten)."""
    return close_vanished(ctx, kind, stored_keys(ctx, kind) - state.seen)


def stored_keys(ctx: SyncContext, kind: str) -> set[str]:
    """The keys of what we hold of a kind and a list must find again (present, or open intervals)."""
    if kind == SyncKind.NODES:
        return nodes.present_node_names(ctx)
    if kind == SyncKind.PODS:
        return open_holder_uids(cluster=ctx.cluster, kind=HolderKind.POD)
    if kind == SyncKind.WORKLOADS:
        return workloads.present_workload_uids(ctx)
    if kind == SyncKind.DEVICE_CLASSES:
        return set(ctx.cluster.device_classes.values_list("name", flat=True))
    if kind == SyncKind.RESOURCE_SLICES:
        return set(ResourceSlice.objects.filter(cluster=ctx.cluster).values_list("name", flat=True))
    if kind == SyncKind.DEVICE_TAINT_RULES:
        return taint_rules.stored_rule_names(ctx)
    known = set(ResourceClaim.objects.filter(cluster=ctx.cluster, present=True).values_list("uid", flat=True))
    return known | open_holder_uids(cluster=ctx.cluster, kind=HolderKind.CLAIM)


def close_vanished(ctx: SyncContext, kind: str, gone: set[str], *, reason: str = "vanished") -> int:
    """Close what a list no longer has (or a watch saw deleted), by ``stored_keys``' keys; returns
    the changes."""
    if gone and kind in (SyncKind.NODES, SyncKind.RESOURCE_SLICES):
        ctx.units_changed()
    if kind == SyncKind.NODES:
        return nodes.vanish_nodes(ctx, gone)
    if kind == SyncKind.PODS:
        return pods.delete_pods(ctx, [{"metadata": {"uid": uid}} for uid in gone])
    if kind == SyncKind.WORKLOADS:
        return workloads.vanish_workloads(ctx, gone)
    if kind == SyncKind.DEVICE_CLASSES:
        return dra.delete_device_classes(ctx, gone)
    if kind == SyncKind.RESOURCE_SLICES:
        return dra.delete_slices(ctx, gone)
    if kind == SyncKind.DEVICE_TAINT_RULES:
        return taint_rules.delete_rules(ctx, gone)
    return dra.vanish_claims(ctx, gone, reason=reason)


def observe_page(kind: str, state: ListState, objects: list[dict[str, Any]]) -> None:
    state.seen.update(object_key(kind, o) for o in objects)
