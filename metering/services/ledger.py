"""The allocation-basis hourly ledger: one cluster-hour from the inventory's allocation ledger.

Exact to the second: each allocation's seconds inside the hour, its GE-hours, and the physical
card-hours it is charged by the card-hour rule, piece by piece inside the hour
(metering/chargeback/split.py). Beside them, each node's card-hours and what nobody held (idle).

Idempotent: re-metering an hour of an open (or closing) period replaces its rows with the same rows;
for a closed period, whose rows the database refuses to change, the differences (the shares' and each
node's idle) become adjustments in the next open period, net of the adjustments already booked, so
nothing is billed twice.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import ROUND_FLOOR, Decimal
from fractions import Fraction
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from gpuplatform.db.bulk_insert import insert_many
from gpuplatform.errors import Conflict, NotFound, ValidationFailed
from inventory.domain.gpu_equivalent import ge_from_decimal
from inventory.models import Allocation, Cluster, Node
from metering.chargeback.split import SECONDS_PER_HOUR, NodeHolding, split_node_hour
from metering.models import (
    Attribution,
    BillingPeriod,
    CapacityHour,
    Meter,
    MeteredHour,
    PeriodState,
    UsageHour,
)
from metering.models.usage import LEDGER_PLACES
from metering.services.adjustments import book_late_data
from metering.services.periods import ensure_period
from quotas.models import Flavor

LEDGER_SOURCE = "ledger"
HOUR = timedelta(hours=1)
_QUANTUM = Decimal(1).scaleb(-LEDGER_PLACES)


@dataclass(frozen=True)
class HourMetered:
    cluster_id: uuid.UUID
    hour: datetime
    rows: int
    adjustments: int
    period: str


def meter_allocation_hour(
    *, cluster_id: uuid.UUID, hour: datetime, now: datetime | None = None
) -> HourMetered:
    """Meter one cluster-hour on the allocation basis. Locks the hour's MeteredHour row (a second
    worker waits, then redoes the same rows); idempotent."""
    hour = _whole_hour(hour)
    if hour + HOUR > (now or timezone.now()):
        raise Conflict(f"the hour {hour:%Y-%m-%dT%H:00Z} is not over yet", code="hour_not_over")
    if not Cluster.objects.filter(pk=cluster_id).exists():
        raise NotFound("No such cluster.")
    period = ensure_period(at=hour)
    with transaction.atomic():
        marker, _ = MeteredHour.objects.get_or_create(cluster_id=cluster_id, hour=hour, source=LEDGER_SOURCE)
        marker = MeteredHour.objects.select_for_update().get(pk=marker.pk)
        period = BillingPeriod.objects.select_for_update().get(pk=period.pk)
        usage, capacity = _compute_hour(cluster_id=cluster_id, hour=hour, period=period)
        adjustments = 0
        if period.state == PeriodState.CLOSED:
            adjustments = book_late_data(
                cluster_id=cluster_id,
                hour=hour,
                period=period,
                fresh=usage,
                meters=(Meter.ALLOCATED_GE_HOURS,),
                what="allocation data",
                capacity=capacity,
            )
        else:
            UsageHour.objects.filter(cluster_id=cluster_id, hour=hour, source=LEDGER_SOURCE).delete()
            CapacityHour.objects.filter(cluster_id=cluster_id, hour=hour).delete()
            insert_many(UsageHour, usage)
            insert_many(CapacityHour, capacity)
        marker.rows = len(usage)
        marker.complete = True
        marker.attempts += 1
        marker.last_error = ""
        marker.computed_at = timezone.now()
        marker.save()
    return HourMetered(cluster_id, hour, len(usage), adjustments, period.label)


def _whole_hour(hour: datetime) -> datetime:
    if hour.tzinfo is None:
        raise ValidationFailed("hour must be timezone-aware", field="hour")
    hour = hour.astimezone(UTC)
    if (hour.minute, hour.second, hour.microsecond) != (0, 0, 0):
        raise ValidationFailed("hour must be a whole hour", field="hour")
    return hour


def _seconds(delta: timedelta) -> int:
    return int(delta.total_seconds())


def _compute_hour(
    *, cluster_id: uuid.UUID, hour: datetime, period: BillingPeriod
) -> tuple[list[UsageHour], list[CapacityHour]]:
    end = hour + HOUR
    # Nodes are counted by what the inventory holds now (it keeps no card-count history): a node
    # present during the hour offers its cards for the whole hour.
    nodes = {
        n["name"]: n
        for n in Node.objects.filter(cluster_id=cluster_id)
        .filter(Q(present=True) | Q(gone_at__gt=hour))
        .values("id", "name", "pool_id", "pool__name", "model_key", "gpu_count")
    }
    flavors = flavor_names()
    allocations = list(
        Allocation.objects.filter(cluster_id=cluster_id, started_at__lt=end)
        .filter(Q(ended_at__isnull=True) | Q(ended_at__gt=hour))
        .values(
            "id", "tenant_id", "namespace", "node_name", "pool_id", "pool__name", "gpu_id",
            "model_key", "resource_name", "ge", "started_at", "ended_at",
        )
        .order_by("id")
    )  # fmt: skip
    holdings: dict[str, list[NodeHolding]] = defaultdict(list)
    for a in allocations:
        start = _seconds(max(a["started_at"], hour) - hour)
        stop = _seconds(min(a["ended_at"] or end, end) - hour)
        a["seconds"] = stop - start
        card = f"gpu/{a['gpu_id']}" if a["gpu_id"] else None
        a["card_key"] = card or ""
        holdings[a["node_name"]].append(
            NodeHolding(str(a["id"]), ge_from_decimal(a["ge"]), start, stop, card)
        )
    charged: dict[str, Decimal] = {}
    capacity = []
    for name in sorted(set(nodes) | set(holdings)):
        node = nodes.get(name)
        # An allocation on a node the inventory no longer knows is kept, charged nothing: no card to
        # charge it on (its GE-hours still show), rather than guessed onto another node.
        cards = node["gpu_count"] if node else 0
        split = split_node_hour(holdings=holdings.get(name, []), cards=cards)
        rounded = _round_keeping_sum(split.charged)
        charged.update(rounded)
        if node is not None:
            card_hours = _decimal(split.card_hours)
            capacity.append(
                CapacityHour(
                    cluster_id=cluster_id,
                    period=period,
                    hour=hour,
                    node_name=name,
                    pool_id=node["pool_id"],
                    pool_name=node["pool__name"] or "",
                    gpu_model=node["model_key"],
                    cards=cards,
                    card_hours=card_hours,
                    idle_card_hours=card_hours - sum(rounded.values(), Decimal(0)),
                )
            )
    usage = []
    for a in allocations:
        node = nodes.get(a["node_name"])
        usage.append(
            UsageHour(
                cluster_id=cluster_id,
                period=period,
                hour=hour,
                share_key=str(a["id"]),
                meter=Meter.ALLOCATED_GE_HOURS,
                allocation_id=a["id"],
                tenant_id=a["tenant_id"],
                namespace=a["namespace"],
                pool_id=a["pool_id"] or (node["pool_id"] if node else None),
                pool_name=a["pool__name"] or (node["pool__name"] or "" if node else ""),
                node_name=a["node_name"],
                card_key=a["card_key"],
                gpu_model=a["model_key"] or (node["model_key"] if node else ""),
                flavor_name=flavors.get((a["pool_id"], a["resource_name"]), ""),
                resource_name=a["resource_name"],
                ge=a["ge"],
                seconds=a["seconds"],
                quantity=_decimal(ge_from_decimal(a["ge"]) * Fraction(a["seconds"], SECONDS_PER_HOUR)),
                card_hours=charged[str(a["id"])],
                attribution=Attribution.ALLOCATION,
                source=LEDGER_SOURCE,
            )
        )
    return usage, capacity


def flavor_names() -> dict[tuple[Any, str], str]:
    """(pool id, resource name) -> flavor name, for the flavors bound to a pool."""
    names: dict[tuple[Any, str], str] = {}
    for flavor in Flavor.objects.filter(pool__isnull=False).order_by("name"):
        for resource in flavor.resource_names:
            names.setdefault((flavor.pool_id, resource), flavor.name)
    return names


def _decimal(value: Fraction) -> Decimal:
    """Half-even to the ledger's 18 places: for quantities each stored once."""
    return (Decimal(value.numerator) / Decimal(value.denominator)).quantize(_QUANTUM)


def _round_keeping_sum(values: dict[str, Fraction]) -> dict[str, Decimal]:
    """Round each share to the ledger's 18 places so that they still sum to the rounded total (largest
    remainders, ties by key): charged + idle then equals the node's card-hours exactly in storage."""
    if not values:
        return {}
    scale = 10**LEDGER_PLACES
    floors = {k: (v * scale).numerator // (v * scale).denominator for k, v in values.items()}
    total = sum(values.values(), Fraction(0)) * scale
    target = round(total)  # Fraction.__round__ rounds half to even
    short = target - sum(floors.values())
    by_remainder = sorted(values, key=lambda k: (-(values[k] * scale - floors[k]), k))
    for k in by_remainder[:short]:
        floors[k] += 1
    return {
        k: (Decimal(units) / scale).quantize(_QUANTUM, rounding=ROUND_FLOOR) for k, units in floors.items()
    }
