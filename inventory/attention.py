"""Inventory's items of the overview's "what needs attention" (gpuplatform/ui/attention.py): present
nodes not ready or cordoned (each linking to the node, or to the pool that lists them all), and
clusters whose sync fails, or was synced once and is kept by no watch loop (no heartbeat, and nothing
committed for two resync intervals); a stale watch loop is the core's "loops stale" item. Nodes and
sync states are the platform's (PlatformOnlyQuerySet), so only platform roles are told of them. A
constant number of queries."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Count, Q, QuerySet
from django.urls import reverse
from django.utils import timezone

from gpuplatform.accounts.models import User
from gpuplatform.ui.attention import Attention
from inventory.models import Node, SyncState
from inventory.sync.heartbeats import sync_heartbeats


def sync_lag_limit() -> timedelta:
    """Lagging: nothing committed for two resync intervals (a quiet cluster still re-lists each one)."""
    return timedelta(seconds=2 * settings.INVENTORY_RESYNC_SECONDS)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _where(nodes: QuerySet[Node], count: int) -> str:
    """Where to act on these nodes: the node itself when there is one, the pool that lists them all
    when they share one, else the first of them by name (two queries)."""
    first = nodes.order_by("name").values_list("pk", "pool_id").first()
    assert first is not None
    if count > 1 and first[1] is not None:
        pools = list(nodes.order_by().values_list("pool_id", flat=True).distinct()[:2])
        if len(pools) == 1:
            return reverse("inventory-pool", args=[first[1]])
    return reverse("inventory-node", args=[first[0]])


def attention(user: User) -> list[Attention]:
    if not user.sees_all_tenants:
        return []
    items = []
    present = Node.objects.visible_to(user).filter(present=True)
    nodes = present.aggregate(
        not_ready=Count("pk", filter=Q(ready=False)), cordoned=Count("pk", filter=Q(cordoned=True))
    )
    if nodes["not_ready"]:
        items.append(
            Attention(
                key="nodes-not-ready",
                severity="critical",
                title=f"{_plural(nodes['not_ready'], 'node')} not ready",
                detail="their cards count as capacity nobody can be admitted onto",
                url=_where(present.filter(ready=False), nodes["not_ready"]),
                count=nodes["not_ready"],
            )
        )
    if nodes["cordoned"]:
        items.append(
            Attention(
                key="nodes-cordoned",
                severity="warning",
                title=f"{_plural(nodes['cordoned'], 'node')} cordoned",
                detail="no new pod lands on them until they are uncordoned",
                url=_where(present.filter(cordoned=True), nodes["cordoned"]),
                count=nodes["cordoned"],
            )
        )
    now = timezone.now()
    # A kind whose watch loop beats is judged by its heartbeat, and a stale one is the core's "loops
    # stale" item (gpuplatform/health/attention.py); here: failing, or synced once and never kept.
    beating = set(sync_heartbeats(now=now))
    lagging = sorted(
        {
            state.cluster.name
            for state in SyncState.objects.select_related("cluster").order_by("cluster__name", "kind")
            if not state.healthy
            or (
                (str(state.cluster_id), state.kind) not in beating
                and (state.last_success_at is None or now - state.last_success_at > sync_lag_limit())
            )
        }
    )
    if lagging:
        items.append(
            Attention(
                key="clusters-sync-lag",
                severity="warning",
                title=f"{_plural(len(lagging), 'cluster')} lagging in sync",
                detail=f"{', '.join(lagging[:5])}: the inventory may not show what the cluster runs now",
                url=reverse("inventory"),
                count=len(lagging),
            )
        )
    return items
