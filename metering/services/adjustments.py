"""Late data for a closed period, booked as adjustments in the next open period.

A closed period's ledger rows cannot change (the PostgreSQL guard, metering/migrations/0002). When a
cluster-hour of it is metered again (a retried incomplete hour, a backfill, Prometheus answering
late, an allocation the inventory learnt of late), what the hour's rows say now is compared with what
the closed period holds plus the adjustments already booked for it; each difference becomes one
``Adjustment`` naming the period, hour, share and meter it corrects (the key of the closed
``UsageHour`` row: cluster, share, meter, hour). Net of what was booked, so metering the same late
data twice books it once. What is booked is audited in the same transaction: one event per call, or
with a ``BookingRun`` (the demo's month of hours, a backfill) one event per run, which each later
hour of the run brings up to date in its own transaction (so the log is not one bookkeeping line
per hour, and no booking is ever without its audit record).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db.models import Sum

from gpuplatform.audit.models import AuditEvent
from gpuplatform.audit.services import record_event
from metering.models import Adjustment, BillingPeriod, UsageHour
from metering.services.periods import next_open_period

ZERO = Decimal(0)


@dataclass
class BookingRun:
    """A run metering many hours: its bookings share one audit event (``event_id`` once written)."""

    event_id: int | None = None


def book_late_data(
    *,
    cluster_id: uuid.UUID,
    hour: datetime,
    period: BillingPeriod,
    fresh: Iterable[UsageHour],
    meters: Sequence[str],
    what: str,
    partial_only_adds: bool = False,
    run: BookingRun | None = None,
) -> int:
    """Book the differences between ``fresh`` (the hour's rows as metered now, unsaved) and the closed
    ``period``'s rows of ``meters`` for the hour, net of adjustments already booked. Runs inside the
    caller's transaction, with the hour's MeteredHour and the period locked.

    ``partial_only_adds`` (usage meters, summed from samples): a share whose fresh reading is
    incomplete (or missing) books only an increase. More samples seen late add usage; fewer (data
    aged out of the source, a gap the closed row did not have) never take back a charge; a complete
    reading books whatever it differs by. So partial readings of one hour in any order cannot book
    back and forth. Returns how many adjustments were booked."""
    stored = {
        (r.share_key, r.meter): r
        for r in UsageHour.objects.filter(cluster_id=cluster_id, hour=hour, meter__in=list(meters))
    }
    booked = {
        (r["share_key"], r["meter"]): (r["q"], r["c"])
        for r in Adjustment.objects.filter(
            adjusts_period=period, cluster_id=cluster_id, hour=hour, meter__in=list(meters)
        )
        .values("share_key", "meter")
        .annotate(q=Sum("quantity_delta"), c=Sum("card_hours_delta"))
    }
    now = {(r.share_key, r.meter): r for r in fresh}
    target: BillingPeriod | None = None
    made: list[Adjustment] = []
    for key in sorted(set(stored) | set(now)):
        row, was = now.get(key), stored.get(key)
        now_q, now_c = (row.quantity, row.card_hours) if row is not None else (ZERO, ZERO)
        was_q, was_c = (was.quantity, was.card_hours) if was is not None else (ZERO, ZERO)
        adj_q, adj_c = booked.get(key, (ZERO, ZERO))
        delta_q, delta_c = now_q - was_q - adj_q, now_c - was_c - adj_c
        if not delta_q and not delta_c:
            continue
        if partial_only_adds and (row is None or not row.complete) and delta_q < 0:
            continue
        if target is None:
            target = next_open_period(after=period)
        meta = row if row is not None else was
        assert meta is not None  # the key came from one of them
        made.append(
            Adjustment(
                period=target,
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
                reason=f"late {what} for {period.label} ({hour:%Y-%m-%dT%H:00Z}) after it closed"[:200],
            )
        )
    if not made:
        return 0
    assert target is not None
    Adjustment.objects.bulk_create(made, batch_size=2000)
    totals: dict[str, dict[str, str]] = {}
    for meter in sorted({a.meter for a in made}):
        mine = [a for a in made if a.meter == meter]
        totals[meter] = {
            "quantity_delta": str(sum((a.quantity_delta for a in mine), ZERO)),
            "card_hours_delta": str(sum((a.card_hours_delta for a in mine), ZERO)),
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
    if run is not None and run.event_id is not None:
        event = AuditEvent.objects.select_for_update().get(pk=run.event_id)
        event.after = _merged(event.after or {}, booked_now)
        event.save(update_fields=["after"])
    else:
        event = record_event(
            actor=None,
            action="usage.adjustment_booked",
            obj=target,
            after={**booked_now, "hours": 1, "last_hour": booked_now["hour"]} if run else booked_now,
        )
        if run is not None:
            run.event_id = event.pk
    return len(made)


def _merged(summary: dict[str, Any], hour: dict[str, Any]) -> dict[str, Any]:
    """A run's event after one more hour: counts and meter totals summed, the hour span widened."""
    meters: dict[str, dict[str, str]] = {k: dict(v) for k, v in summary.get("meters", {}).items()}
    for meter, added in hour["meters"].items():
        was = meters.setdefault(meter, {"quantity_delta": "0", "card_hours_delta": "0", "lines": "0"})
        for key in ("quantity_delta", "card_hours_delta"):
            was[key] = str(Decimal(was[key]) + Decimal(added[key]))
        was["lines"] = str(int(was["lines"]) + int(added["lines"]))
    periods = sorted(
        {*summary.get("adjusts_periods", [summary.get("adjusts_period")]), hour["adjusts_period"]}
    )
    hours = sorted([summary.get("hour", hour["hour"]), summary.get("last_hour", hour["hour"]), hour["hour"]])
    return {
        **summary,
        "adjusts_periods": [p for p in periods if p],
        "hour": hours[0],
        "last_hour": hours[-1],
        "hours": int(summary.get("hours", 1)) + 1,
        "adjustments": int(summary.get("adjustments", 0)) + hour["adjustments"],
        "meters": meters,
    }
