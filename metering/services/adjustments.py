"""Late data for a closed period, booked as adjustments in the next open period.

A closed period's ledger rows cannot change (the PostgreSQL guard, metering/migrations/0002). When a
cluster-hour of it is metered again (a retried incomplete hour, a backfill, Prometheus answering
late, an allocation the inventory learnt of late), what the hour's rows say now is compared with what
the closed period holds plus the adjustments already booked for it; each difference becomes one
``Adjustment`` naming the period, hour, share and meter it corrects (the key of the closed
``UsageHour`` row: cluster, share, meter, hour). Net of what was booked, so metering the same late
data twice books it once. Each run that books something is audited, in the same transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from decimal import Decimal

from django.db.models import Sum

from gpuplatform.audit.services import record_event
from metering.models import Adjustment, BillingPeriod, UsageHour
from metering.services.periods import next_open_period

ZERO = Decimal(0)


def book_late_data(
    *,
    cluster_id: uuid.UUID,
    hour: datetime,
    period: BillingPeriod,
    fresh: Iterable[UsageHour],
    meters: Sequence[str],
    what: str,
    partial_only_adds: bool = False,
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
    record_event(
        actor=None,
        action="usage.adjustment_booked",
        obj=target,
        after={
            "adjusts_period": period.label,
            "cluster_id": str(cluster_id),
            "hour": hour.isoformat(),
            "source": what,
            "adjustments": len(made),
            "meters": totals,
        },
    )
    return len(made)
