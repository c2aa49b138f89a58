"""Nodes whose MIG layout the NVIDIA DRA driver owns (DynamicMIG): ``Node.driver_managed_mig`` from
the ``dynamic_mig`` flag of the slices stored for them (inventory/domain/mig_management.py)."""

from __future__ import annotations

from collections.abc import Iterable

from inventory.models import Node, ResourceSlice
from inventory.sync.context import SyncContext


def mark_driver_managed_mig(ctx: SyncContext, *, node_names: Iterable[str]) -> int:
    """Set the flag on the named nodes from their slices as stored now; returns nodes changed.
    Three queries whatever the count: the slices that say so, then one update each way."""
    names = set(node_names) - {""}
    if not names:
        return 0
    managed = set(
        ResourceSlice.objects.filter(cluster=ctx.cluster, node_name__in=names, dynamic_mig=True)
        .values_list("node_name", flat=True)
        .distinct()
    )
    nodes = Node.objects.filter(cluster=ctx.cluster, name__in=names)
    changed = nodes.filter(name__in=managed, driver_managed_mig=False).update(driver_managed_mig=True)
    changed += (
        nodes.exclude(name__in=managed).filter(driver_managed_mig=True).update(driver_managed_mig=False)
    )
    return changed
