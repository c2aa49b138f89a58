"""The SLIs metering measures itself (docs/slos.md); policy rollout's is contributed by ``policies``.

Each returns (good, total) events for a bucket [start, end), or None when the bucket cannot be known.
"""

from __future__ import annotations

import uuid
from collections import Counter, defaultdict
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db.models import Count, Min, Q, Sum

from gpuplatform.sli_sources import SliKind, register_sli
from inventory.models import Gpu
from inventory.selectors import pool_resource_capacity
from metering.collection.readings import UsageSourceError
from metering.models import Meter, UsageHour
from metering.services.collection import prometheus_for
from metering.slos.health import Card, ClusterXids, judge
from quotas.models import CapacityRequest, Quota, RequestState
from tenants.models import Tenant

QUEUE_WAIT_DEFAULT_SECONDS = 600
SATURATED_DEFAULT = Decimal("0.9")
DELIVERED_DEFAULT = Decimal("0.95")


def _subtree(tenant_id: uuid.UUID | None) -> Q:
    if tenant_id is None:
        return Q()
    path = Tenant.objects.values_list("path", flat=True).get(pk=tenant_id)
    return Q(tenant__path__startswith=path)


def queue_wait(
    *, start: datetime, end: datetime, tenant_id: uuid.UUID | None, params: Mapping[str, Any]
) -> tuple[Decimal, Decimal]:
    """Requests submitted in the bucket that their tenant's own nominal quota could hold (each
    resource asked within the tenant's nominal for that flavor): good when admitted within
    ``within_seconds`` of submission (default 600)."""
    within = int(params.get("within_seconds", QUEUE_WAIT_DEFAULT_SECONDS))
    nominal = {
        (tenant, flavor, resource): n
        for tenant, flavor, resource, n in Quota.objects.values_list(
            "tenant_id", "flavor_id", "resource", "nominal"
        )
    }
    requests = (
        CapacityRequest.objects.filter(_subtree(tenant_id), created_at__gte=start, created_at__lt=end)
        .annotate(
            first_admitted=Min("transitions__at", filter=Q(transitions__to_state=RequestState.ADMITTED))
        )
        .values_list("tenant_id", "flavor_id", "amounts", "created_at", "first_admitted")
    )
    good = total = 0
    for tenant, flavor, amounts, created, admitted in requests:
        if not all(
            amount <= nominal.get((tenant, flavor, resource), -1)
            for resource, amount in (amounts or {}).items()
        ):
            continue  # needs borrowing: outside this SLI
        total += 1
        if admitted is not None and (admitted - created).total_seconds() <= within:
            good += 1
    return Decimal(good), Decimal(total)


def gpu_health(
    *, start: datetime, end: datetime, tenant_id: uuid.UUID | None, params: Mapping[str, Any]
) -> tuple[Decimal, Decimal] | None:
    """Present cards (as the inventory holds them at the bucket's end) that are healthy there and, where
    their cluster has a Prometheus, whose DCGM XID gauge held no critical code in [start, end) and was
    seen at every scrape step; a card with a gap and no known fault is unknown, left out of both counts.
    None when every card is unknown (the cluster's Prometheus down)."""
    rows = list(
        Gpu.objects.filter(node__present=True).values_list(
            "pk", "node__cluster_id", "healthy", "uuid", "node__name", "index"
        )
    )
    cards = [
        Card(str(pk), str(cluster), healthy, card_uuid, node, index)
        for pk, cluster, healthy, card_uuid, node, index in rows
    ]
    clusters: dict[str, ClusterXids] = {}
    cards_per_cluster = Counter(card.cluster for card in cards)
    for cluster_id, count in sorted(cards_per_cluster.items()):
        source = prometheus_for(cluster_id=uuid.UUID(cluster_id))
        if source is None:
            continue
        try:
            window = source.read_xids(start=start, end=end, expected_cards=count)
        except UsageSourceError:
            clusters[cluster_id] = ClusterXids(None, 0, frozenset(source.config.critical_xids))
            continue
        clusters[cluster_id] = ClusterXids(
            window.readings, window.expected_points, frozenset(source.config.critical_xids)
        )
    verdict = judge(cards, clusters)
    good, bad = len(verdict.good), len(verdict.bad)
    if verdict.unknown and not good and not bad:
        return None
    return Decimal(good), Decimal(good + bad)


def quota_backed(
    *, start: datetime, end: datetime, tenant_id: uuid.UUID | None, params: Mapping[str, Any]
) -> tuple[Decimal, Decimal] | None:
    """Flavor resources whose nominal quota (every tenant's, or the subtree's flavors) the pool's
    healthy physical capacity can place: good per (flavor, resource) backed, at the bucket's end."""
    quotas = Quota.objects.filter(_subtree(tenant_id)) if tenant_id else Quota.objects.all()
    flavors = set(quotas.values_list("flavor_id", flat=True))
    promised: dict[tuple[uuid.UUID, uuid.UUID | None, str], int] = defaultdict(int)
    for flavor, pool, resource, n in Quota.objects.filter(flavor_id__in=flavors).values_list(
        "flavor_id", "flavor__pool_id", "resource", "nominal"
    ):
        promised[(flavor, pool, resource)] += n
    if not promised:
        return None
    pools = {pool for _, pool, _ in promised if pool is not None}
    capacity = pool_resource_capacity(pool_ids=pools)
    healthy = _healthy_fraction(pools)
    good = sum(
        1
        for (_, pool, resource), n in promised.items()
        if pool is not None
        and n <= int(capacity.get(pool, {}).get(resource, 0) * healthy.get(pool, Decimal(0)))
    )
    return Decimal(good), Decimal(len(promised))


def _healthy_fraction(pools: set[uuid.UUID]) -> dict[uuid.UUID, Decimal]:
    rows = (
        Gpu.objects.filter(node__pool_id__in=pools, node__present=True)
        .values("node__pool_id")
        .annotate(total=Count("id"), good=Count("id", filter=Q(healthy=True)))
        .values_list("node__pool_id", "good", "total")
    )
    return {pool: Decimal(good) / total for pool, good, total in rows if total}


def share_delivery(
    *, start: datetime, end: datetime, tenant_id: uuid.UUID | None, params: Mapping[str, Any]
) -> tuple[Decimal, Decimal] | None:
    """On shared cards that were saturated in the hour (their holders' used GE-hours at least
    ``saturated`` of the card, default 0.9), each share is good when it used at least ``delivered``
    (default 0.95) of what it was allocated. Only complete utilisation rows count; an hour without
    them is unknown (None), not good."""
    saturated = Decimal(str(params.get("saturated", SATURATED_DEFAULT)))
    delivered = Decimal(str(params.get("delivered", DELIVERED_DEFAULT)))
    rows = UsageHour.objects.filter(
        _subtree(tenant_id) if tenant_id else Q(), hour__gte=start, hour__lt=end
    ).exclude(card_key="")
    used = dict(
        rows.filter(meter=Meter.USED_GE_HOURS, complete=True)
        .values("share_key")
        .annotate(q=Sum("quantity"))
        .values_list("share_key", "q")
    )
    if not used:
        return None
    allocated: dict[str, tuple[str, Decimal]] = {}
    per_card: dict[str, list[str]] = defaultdict(list)
    for share, card, quantity in rows.filter(meter=Meter.ALLOCATED_GE_HOURS).values_list(
        "share_key", "card_key", "quantity"
    ):
        allocated[share] = (card, quantity)
        per_card[card].append(share)
    good = total = 0
    for shares in per_card.values():
        if len(shares) < 2 or any(share not in used for share in shares):
            continue
        if sum(used[share] for share in shares) < saturated:
            continue
        for share in shares:
            total += 1
            if used[share] >= delivered * allocated[share][1]:
                good += 1
    return Decimal(good), Decimal(total)


def register() -> None:
    register_sli(
        SliKind(
            name="queue_wait",
            title="Queue wait within nominal quota",
            bucket_seconds=300,
            settle=lambda params: int(params.get("within_seconds", QUEUE_WAIT_DEFAULT_SECONDS)),
            compute=queue_wait,
            describe="Requests within their nominal quota admitted within within_seconds (default 600).",
        )
    )
    register_sli(
        SliKind(
            name="gpu_health",
            title="GPU health",
            bucket_seconds=300,
            settle=None,
            compute=gpu_health,
            describe="Healthy cards over present cards, with DCGM critical XIDs, measured every bucket.",
        )
    )
    register_sli(
        SliKind(
            name="quota_backed",
            title="Quota backed by inventory",
            bucket_seconds=300,
            settle=None,
            compute=quota_backed,
            describe="Flavor resources whose nominal quota fits the pool's healthy physical capacity.",
        )
    )
    register_sli(
        SliKind(
            name="share_delivery",
            title="Share delivery under contention",
            bucket_seconds=3600,
            settle=lambda params: 2 * 3600,
            compute=share_delivery,
            describe="On saturated shared cards, shares that got at least `delivered` of their allocation.",
        )
    )
