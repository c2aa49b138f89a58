"""Inventory's items of the overview's "what needs attention" (gpuplatform/ui/attention.py): present
nodes not ready or cordoned, and clusters whose sync lags (no list or watch batch committed for two
resync intervals, or the last attempt failed). Nodes and sync states are the platform's
(PlatformOnlyQuerySet), so only platform roles are told of them. Two queries."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Count, Q
from django.urls import reverse
from django.utils import timezone

from gpuplatform.accounts.models import User
from gpuplatform.ui.attention import Attention
from inventory.models import Node, SyncState


def sync_lag_limit() -> timedelta:
    """Lagging: nothing committed for two resync intervals (a quiet cluster still re-lists each one)."""
    return timedelta(seconds=2 * settings.INVENTORY_RESYNC_SECONDS)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def attention(user: User) -> list[Attention]:
    if not user.sees_all_tenants:
        return []
    items = []
    nodes = (
        Node.objects.visible_to(user)
        .filter(present=True)
        .aggregate(
            not_ready=Count("pk", filter=Q(ready=False)), cordoned=Count("pk", filter=Q(cordoned=True))
        )
    )
    if nodes["not_ready"]:
        items.append(
            Attention(
                key="nodes-not-ready",
                severity="critical",
                title=f"{_plural(nodes['not_ready'], 'node')} not ready",
                detail="their cards count as capacity nobody can be admitted onto",
                url=reverse("inventory"),
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
                url=reverse("inventory"),
                count=nodes["cordoned"],
            )
        )
    now = timezone.now()
    lagging = sorted(
        {
            state.cluster.name
            for state in SyncState.objects.select_related("cluster").order_by("cluster__name", "kind")
            if not state.healthy
            or state.last_success_at is None
            or now - state.last_success_at > sync_lag_limit()
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
