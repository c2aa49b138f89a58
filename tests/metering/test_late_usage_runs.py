"""Late usage booked by a run over many hours (the demo's month, a backfill): one audit event per hour,
each in its hour's transaction and never changed afterwards (the log is append-only: PostgreSQL
refuses an UPDATE or DELETE of an event), all carrying the run's id, by which /audit/ shows the run
as one row. Figures: 0.5 GE-hours used late in each of two hours of a closed March."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal as D

import pytest
from django.db import IntegrityError, transaction

from gpuplatform.accounts.models import PlatformRole
from gpuplatform.audit.models import AuditEvent
from gpuplatform.audit.services import record_event
from metering.models import Adjustment, BillingPeriod
from metering.models.usage import Attribution, Meter, UsageHour
from metering.services.adjustments import BookingRun, book_late_data
from metering.services.periods import ensure_period
from tests.fixtures.people import make_user
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


def test_a_run_over_two_hours_books_an_event_per_hour_shown_as_one_row(client):
    cluster, march = inv.cluster(), closed_march()
    run = BookingRun()
    assert [book(cluster, march, hour, run) for hour in HOURS] == [1, 1]
    assert Adjustment.objects.count() == 2
    events = list(AuditEvent.objects.filter(action="usage.adjustment_booked").order_by("id"))
    assert [e.after["hour"] for e in events] == [h.isoformat() for h in HOURS]
    assert {e.after["run"] for e in events} == {run.id}
    assert [D(e.after["meters"]["used_ge_hours"]["quantity_delta"]) for e in events] == [D("0.5")] * 2

    client.force_login(make_user("pat", PlatformRole.PLATFORM_ADMIN))
    page = client.get("/audit/", {"system": "1", "action": "usage.adjustment_booked"}).content.decode()
    assert page.count('data-action="usage.adjustment_booked"') == 1  # the run, as one row
    assert "one run: 2 events" in page
    both = client.get("/audit/", {"system": "1", "run": run.id}).content.decode()
    assert both.count('data-action="usage.adjustment_booked"') == 2


def test_an_audit_event_cannot_be_changed_or_deleted():
    cluster, march = inv.cluster(), closed_march()
    book(cluster, march, HOURS[0])
    event = AuditEvent.objects.get(action="usage.adjustment_booked")
    for change in (
        lambda: AuditEvent.objects.filter(pk=event.pk).update(after={"forged": True}),
        lambda: AuditEvent.objects.filter(pk=event.pk).delete(),
    ):
        with pytest.raises(IntegrityError, match="append-only"), transaction.atomic():
            change()
    event.refresh_from_db()
    assert event.after["adjustments"] == 1


def test_deleting_a_user_keeps_their_events_under_their_name():
    user = make_user("leaver")
    with transaction.atomic():
        record_event(actor=user, action="tenant.updated", obj=user)
    user.delete()
    event = AuditEvent.objects.get(action="tenant.updated")
    assert (event.actor_id, event.actor_label) == (None, "leaver")


def test_without_a_run_each_call_is_its_own_event():
    cluster, march = inv.cluster(), closed_march()
    for hour in HOURS:
        book(cluster, march, hour)
    assert AuditEvent.objects.filter(action="usage.adjustment_booked").count() == 2
