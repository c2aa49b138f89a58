"""Late data for a closed period, booked as adjustments in the next open period.

A closed period's ledger rows cannot change (the PostgreSQL guard, metering/migrations/0002). When a
cluster-hour of it is metered again (a retried incomplete hour, a backfill, Prometheus answering
late, an allocation the inventory learnt of late or learnt had ended earlier), what the hour reads
now is compared with what the closed period holds plus every adjustment already booked for the
hour; each difference becomes one ``Adjustment`` naming what it corrects: the period, hour, share and
meter of a usage row (cluster, share, meter, hour), or ``idle/<node>`` and ``idle_card_hours`` for a
node's idle capacity in that hour. Both ways: more, less, a share gone (also one that exists only as
earlier adjustments, never in the closed rows), and the idle the change moved, so across periods a
pool still recovers exactly its cards x hours. Net of what was booked, so metering the same late data
twice books it once.
What is booked is audited in the same transaction, one event per hour booked (the log is append-only:
no event is ever changed afterwards). A ``BookingRun`` (the demo's month of hours, a backfill) gives its
events one run id, by which the audit log shows the run as one row, so it is not read as one
bookkeeping line per hour.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import TypeVar

from gpuplatform.audit.services import record_event
from metering.models import Adjustment, BillingPeriod, CapacityHour, UsageHour
from metering.models.periods import IDLE_METER
from metering.services.periods import next_open_period

ZERO = Decimal(0)
_Row = TypeVar("_Row", UsageHour, CapacityHour)


@dataclass
class _Booked:
    """What earlier adjustments of one key add up to, and the latest one's attributes (for a share
    that exists only as adjustments: neither the closed rows nor the fresh read know it)."""

    quantity: Decimal
    card_hours: Decimal
    latest: Adjustment


@dataclass(frozen=True)
class BookingRun:
    """A run metering many hours: each hour's event carries its ``id`` (``after.run``)."""

    id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])


# Rows metered before the ledger carried 18 places hold card-hours rounded to nine (by largest
# remainder: off by under 1e-9); re-read now, exactly, such an hour differs by that rounding alone,
# which is not late data. No real change is that small: one second of the least GE a share can hold
# (a MiB of an 80 GiB card) is 3.4e-9 card-hours.
NINE_PLACES = Decimal("1e-9")


def _figure(value: Decimal) -> str:
    """A quantity for the audit: to nine places where that is all it has (as before the ledger
    carried 18), else every place it has."""
    nine = value.quantize(NINE_PLACES)
    return str(nine if nine == value else value)


def book_late_data(
    *,
    cluster_id: uuid.UUID,
    hour: datetime,
    period: BillingPeriod,
    fresh: Iterable[UsageHour],
    meters: Sequence[str],
    what: str,
    partial_only_adds: bool = False,
    capacity: Iterable[CapacityHour] | None = None,
    run: BookingRun | None = None,
) -> int:
    """Book the differences between ``fresh`` (the hour's rows as metered now, unsaved) and the closed
    ``period``'s rows of ``meters`` for the hour, net of adjustments already booked; with
    ``capacity`` (the hour's node rows as metered now, allocation basis), each node's idle likewise.
    Runs inside the caller's transaction, with the hour's MeteredHour and the period locked.

    ``partial_only_adds`` (usage meters, summed from samples): a share whose fresh reading is
    incomplete (or missing) books only an increase. More samples seen late add usage; fewer (data
    aged out of the source, a gap the closed row did not have) never take back a charge; a complete
    reading books whatever it differs by. So partial readings of one hour in any order cannot book
    back and forth. Returns how many adjustments were booked."""
    made = _usage_adjustments(
        cluster_id=cluster_id,
        hour=hour,
        period=period,
        fresh=fresh,
        meters=meters,
        partial_only_adds=partial_only_adds,
    )
    if capacity is not None:
        made.extend(_idle_adjustments(cluster_id=cluster_id, hour=hour, period=period, fresh=capacity))
    if not made:
        return 0
    target = next_open_period(after=period)
    reason = f"late {what} for {period.label} ({hour:%Y-%m-%dT%H:00Z}) after it closed"[:200]
    for adjustment in made:
        adjustment.period, adjustment.reason = target, reason
    Adjustment.objects.bulk_create(made, batch_size=2000)
    totals: dict[str, dict[str, str]] = {}
    for meter in sorted({a.meter for a in made}):
        mine = [a for a in made if a.meter == meter]
        totals[meter] = {
            "quantity_delta": _figure(sum((a.quantity_delta for a in mine), ZERO)),
            "card_hours_delta": _figure(sum((a.card_hours_delta for a in mine), ZERO)),
            "lines": str(len(mine)),
        }
    booked_now = {
        "adjusts_period": period.label,
        "cluster_id": str(cluster_id),
        "hour": hour.isoformat(),
        "source": what,
        "adjustments": len(made),
        "meters": totals,
    }
    record_event(
        actor=None,
        action="usage.adjustment_booked",
        obj=target,
        after={**booked_now, "run": run.id} if run is not None else booked_now,
    )
    return len(made)


def _booked(
    *, cluster_id: uuid.UUID, hour: datetime, period: BillingPeriod, meters: Sequence[str]
) -> dict[tuple[str, str], _Booked]:
    booked: dict[tuple[str, str], _Booked] = {}
    for a in Adjustment.objects.filter(
        adjusts_period=period, cluster_id=cluster_id, hour=hour, meter__in=list(meters)
    ).order_by("created_at", "id"):
        key = (a.share_key, a.meter)
        found = booked.get(key)
        if found is None:
            booked[key] = _Booked(a.quantity_delta, a.card_hours_delta, a)
        else:
            found.quantity += a.quantity_delta
            found.card_hours += a.card_hours_delta
            found.latest = a
    return booked


def _usage_adjustments(
    *,
    cluster_id: uuid.UUID,
    hour: datetime,
    period: BillingPeriod,
    fresh: Iterable[UsageHour],
    meters: Sequence[str],
    partial_only_adds: bool,
) -> list[Adjustment]:
    stored = {
        (r.share_key, r.meter): r
        for r in UsageHour.objects.filter(cluster_id=cluster_id, hour=hour, meter__in=list(meters))
    }
    booked = _booked(cluster_id=cluster_id, hour=hour, period=period, meters=meters)
    now = {(r.share_key, r.meter): r for r in fresh}
    made: list[Adjustment] = []
    # Keys booked earlier count too: a share first learnt of after the close lives only in its
    # adjustments, and when it turns out shorter (or gone) only they say what to take back.
    for key in sorted(set(stored) | set(now) | set(booked)):
        row, was, earlier = now.get(key), stored.get(key), booked.get(key)
        now_q, now_c = (row.quantity, row.card_hours) if row is not None else (ZERO, ZERO)
        was_q, was_c = (was.quantity, was.card_hours) if was is not None else (ZERO, ZERO)
        adj_q, adj_c = (earlier.quantity, earlier.card_hours) if earlier is not None else (ZERO, ZERO)
        delta_q, delta_c = now_q - was_q - adj_q, now_c - was_c - adj_c
        if abs(delta_q) < NINE_PLACES and abs(delta_c) < NINE_PLACES:
            continue
        if partial_only_adds and (row is None or not row.complete) and delta_q < 0:
            continue
        meta = _described_by(row, was, earlier)
        made.append(
            Adjustment(
                adjusts_period=period,
                cluster_id=cluster_id,
                hour=hour,
                share_key=key[0],
                meter=key[1],
                tenant_id=meta.tenant_id,
                pool_id=meta.pool_id,
                pool_name=meta.pool_name,
                gpu_model=meta.gpu_model,
                flavor_name=meta.flavor_name,
                quantity_delta=delta_q,
                card_hours_delta=delta_c,
            )
        )
    return made


def _described_by(row: _Row | None, was: _Row | None, earlier: _Booked | None) -> _Row | Adjustment:
    """The row whose pool, model and holder an adjustment copies: what is read now, else the
    closed row, else the latest adjustment (a key comes from at least one of the three)."""
    if row is not None:
        return row
    if was is not None:
        return was
    assert earlier is not None
    return earlier.latest


def idle_key(node_name: str) -> str:
    """The share key an idle adjustment names: the node whose idle card-hours it corrects."""
    return f"idle/{node_name}"[:600]


def _idle_adjustments(
    *, cluster_id: uuid.UUID, hour: datetime, period: BillingPeriod, fresh: Iterable[CapacityHour]
) -> list[Adjustment]:
    """Each node's idle card-hours as read now against the closed CapacityHour row plus the idle
    adjustments booked for it. A node the closed period never counted (an hour metered only after
    the close) books its whole idle: that capacity was never reported either."""
    stored = {idle_key(r.node_name): r for r in CapacityHour.objects.filter(cluster_id=cluster_id, hour=hour)}
    booked = _booked(cluster_id=cluster_id, hour=hour, period=period, meters=(IDLE_METER,))
    now = {idle_key(r.node_name): r for r in fresh}
    made: list[Adjustment] = []
    for key in sorted(set(stored) | set(now) | {k for k, _ in booked}):
        row, was, earlier = now.get(key), stored.get(key), booked.get((key, IDLE_METER))
        delta = (
            (row.idle_card_hours if row is not None else ZERO)
            - (was.idle_card_hours if was is not None else ZERO)
            - (earlier.card_hours if earlier is not None else ZERO)
        )
        if abs(delta) < NINE_PLACES:
            continue
        meta = _described_by(row, was, earlier)
        made.append(
            Adjustment(
                adjusts_period=period,
                cluster_id=cluster_id,
                hour=hour,
                share_key=key,
                meter=IDLE_METER,
                tenant_id=None,
                pool_id=meta.pool_id,
                pool_name=meta.pool_name,
                gpu_model=meta.gpu_model,
                flavor_name="",
                quantity_delta=delta,
                card_hours_delta=delta,
            )
        )
    return made
