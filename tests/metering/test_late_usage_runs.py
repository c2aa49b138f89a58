"""Late usage booked by a run over many hours (the demo's month, a backfill) is one audit event for the
run, kept up to date hour by hour in each hour's own transaction; a single metering call stays one
event of its own. Figures: 0.5 GE-hours used late in each of two hours of a closed March."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal as D

import pytest
from django.db import transaction

from gpuplatform.audit.models import AuditEvent
from metering.models import Adjustment, BillingPeriod
from metering.models.usage import Attribution, Meter, UsageHour
from metering.services.adjustments import BookingRun, book_late_data
from metering.services.periods import ensure_period
from tests.inventory import factories as inv

pytestmark = pytest.mark.django_db

FIRST = datetime(2025, 3, 10, 10, tzinfo=UTC)
HOURS = [FIRST, FIRST + timedelta(hours=1)]


def closed_march() -> BillingPeriod:
    march = ensure_period(at=FIRST)
    BillingPeriod.objects.filter(pk=march.pk).update(state="closed")
    march.refresh_from_db()
    return march


def late_row(cluster, march, hour) -> UsageHour:
    return UsageHour(
        cluster=cluster, period=march, hour=hour, share_key="share-1", meter=Meter.USED_GE_HOURS,
        quantity=D("0.5"), card_hours=D(0), attribution=Attribution.SHARE, source="simulated",
        complete=True, pool_name="h100-pool", gpu_model="H100-80GB",
    )  # fmt: skip


def book(cluster, march, hour, run=None) -> int:
    with transaction.atomic():
        return book_late_data(
            cluster_id=cluster.pk, hour=hour, period=march, fresh=[late_row(cluster, march, hour)],
            meters=(Meter.USED_GE_HOURS,), what="usage (simulated)", run=run,
        )  # fmt: skip


def test_a_run_over_two_hours_books_two_adjustments_under_one_audit_event():
    cluster, march = inv.cluster(), closed_march()
    run = BookingRun()
    assert [book(cluster, march, hour, run) for hour in HOURS] == [1, 1]
    assert Adjustment.objects.count() == 2
    (event,) = AuditEvent.objects.filter(action="usage.adjustment_booked")
    after = event.after
    assert (after["hours"], after["adjustments"]) == (2, 2)
    assert (after["hour"], after["last_hour"]) == (HOURS[0].isoformat(), HOURS[1].isoformat())
    assert D(after["meters"]["used_ge_hours"]["quantity_delta"]) == D("1.0")  # 0.5 + 0.5
    assert after["adjusts_periods"] == ["2025-03"]


def test_without_a_run_each_call_is_its_own_event():
    cluster, march = inv.cluster(), closed_march()
    for hour in HOURS:
        book(cluster, march, hour)
    assert AuditEvent.objects.filter(action="usage.adjustment_booked").count() == 2
