"""The fleet panel of the overview page: cards (physical GE) beside what the nodes advertise, allocated
and free, per pool and GPU model, all from inventory/capacity.py (the one truth for capacity), and the
nodes that need attention. Pools pass through the scoping door: a tenant sees the shared pools and
those dedicated to it, and no node counts (nodes are platform objects)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from gpuplatform.accounts.models import User
from inventory.capacity import ModelCapacity, pool_model_capacity
from inventory.models import Node, NodePool

TEMPLATE = "inventory/_overview_panel.html"
POOLS_SHOWN = 12  # the overview is a glance; the inventory page pages through every pool


def _percent(part: Decimal, whole: Decimal) -> float:
    return float(part / whole * 100) if whole else 0.0


def overview_context(user: User) -> dict[str, Any]:
    visible = NodePool.objects.visible_to(user)
    pools = list(visible.select_related("cluster").order_by("cluster__name", "name")[:POOLS_SHOWN])
    capacity = pool_model_capacity(pool_ids=[p.pk for p in pools])
    rows = [
        {"pool": pool, "c": c, "held_pct": _percent(c.allocated_ge, c.physical_ge)}
        for pool in pools
        for c in capacity.get(pool.pk, [])
    ]
    every: list[ModelCapacity] = [row["c"] for row in rows]
    totals = {
        "cards": sum(c.cards for c in every),
        "allocated": sum((c.allocated_ge for c in every), Decimal(0)),
        "free": sum((c.free_ge for c in every), Decimal(0)),
        "advertised": sum((c.advertised_ge for c in every), Decimal(0)),
        "advertised_allocated": sum((c.advertised_allocated_ge for c in every), Decimal(0)),
        "advertised_free": sum((c.advertised_free_ge for c in every), Decimal(0)),
    }
    nodes = Node.objects.visible_to(user).filter(present=True)
    attention = (
        {"not_ready": nodes.filter(ready=False).count(), "cordoned": nodes.filter(cordoned=True).count()}
        if user.sees_all_tenants
        else None
    )
    return {
        "fleet_rows": rows,
        "fleet_totals": totals,
        "fleet_more": visible.count() > len(pools),
        "attention": attention,
    }
