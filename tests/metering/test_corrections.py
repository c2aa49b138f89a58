"""Corrections both ways: what a re-read of a closed hour changes (more, less, a share gone, the idle
it moved) is booked in the next open period, net of everything booked before, each adjustment naming
the March hour and share (or node's idle) it corrects; and the hours the sync learnt of late are
metered again by a scheduled job, idempotent.

The fleet is tests/metering/scenario.py (east, one node per pool). Figures are worked by hand beside
each assertion; amounts are rounded once per line, half-even.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal as D

import pytest
from celery import current_app
from django.conf import settings

from inventory.changed_hours import mark_changed_hours
from inventory.models import Allocation, ChangedHours
from metering.models import Adjustment, BillingPeriod, CapacityHour, ReportLine, UsageHour
from metering.services.ledger import meter_allocation_hour
from metering.services.periods import close_billing_period, start_closing_period
from metering.services.rates import create_rate_card
from metering.services.reports import build_period_report
from metering.tasks import remeter_changed_hours_task, remeter_late_changes_task
from tests.metering.scenario import HOUR, at, build_fleet, hold, the_hour

pytestmark = pytest.mark.django_db

MARCH = datetime(2025, 3, 1, tzinfo=UTC)
LATER = datetime(2025, 4, 2, tzinfo=UTC)


def lines(period, kind):
    return {
        (line.tenant_slug, line.pool_name): line.amount
        for line in ReportLine.objects.filter(period=period, kind=kind)
    }


def close_march(cast):
    # The fleet's other pools carry no rate card here: closing says so knowingly.
    start_closing_period(actor=cast.fiona, period_id=BillingPeriod.objects.get(label="2025-03").pk, now=LATER)
    return close_billing_period(
        actor=cast.fiona,
        period_id=BillingPeriod.objects.get(label="2025-03").pk,
        now=LATER,
        acknowledge_unpriced=True,
    )


@pytest.fixture
def priced(cast):
    fleet = build_fleet()
    fleet.allocations = the_hour(fleet, cast)
    create_rate_card(
        actor=cast.fiona, gpu_model="H100-80GB", currency="USD", price_per_ge_hour=D("2.50"),
        effective_from=MARCH,
    )  # fmt: skip
    meter_allocation_hour(cluster_id=fleet.cluster.pk, hour=HOUR, now=LATER)
    return fleet


def test_a_late_allocation_in_a_closed_month_books_the_charge_and_takes_as_much_off_idle(priced, cast):
    march = close_march(cast)
    # March's h100-hami card (2.50 USD): nlp 1/6 -> 0.42, vision 0.25 -> 0.62, idle 0.583333333 -> 1.46.
    assert lines(march, "idle")[("", "east/h100-hami")] == D("1.46")
    # An nlp HAMi share of 25% of the card, all hour, learnt of after the close. The card never goes
    # above 1 GE (0.25 + 0.25, and 0.25 + 0.5 + 0.25 = 1 from 10:10 to 10:30), so no one else moves:
    # nlp +0.25 card-h x 2.50 = +0.625 -> +0.62; the card's idle 0.583333333 -> 0.333333333: -0.25,
    # -0.625 -> -0.62.
    late = hold(priced, tenant=cast.nlp, pool="h100-hami", name="n-late", ge="0.25",
                start=at(0), end=at(60), on_card=True)  # fmt: skip
    assert meter_allocation_hour(cluster_id=priced.cluster.pk, hour=HOUR, now=LATER).adjustments == 2
    april = BillingPeriod.objects.get(label="2025-04")
    booked = {(a.share_key, a.meter): a for a in Adjustment.objects.filter(period=april)}
    assert {key: a.card_hours_delta for key, a in booked.items()} == {
        (str(late.pk), "allocated_ge_hours"): D("0.25"),
        ("idle/h100-hami-0", "idle_card_hours"): D("-0.25"),
    }
    # Each names what it corrects: March, the hour, the share or the node's idle.
    assert {(a.adjusts_period_id, a.hour) for a in booked.values()} == {(march.pk, HOUR)}
    april = build_period_report(period_id=april.pk)
    assert lines(april, "adjustment") == {("nlp", "east/h100-hami"): D("0.62")}
    assert lines(april, "idle_adjustment") == {("", "east/h100-hami"): D("-0.62")}
    # Across the two periods the card recovers 2.50 (0.42 + 0.62 + 1.46 + 0.62 - 0.62), not 3.12.
    # Metering the hour again books nothing: net of what was booked.
    assert meter_allocation_hour(cluster_id=priced.cluster.pk, hour=HOUR, now=LATER).adjustments == 0


@pytest.fixture
def t4_month(cast):
    """The t4-ts node (time-slicing x 4) priced 0.45 USD per GE-hour, six hours of 10 March metered
    with nothing on it, and March closed."""
    fleet = build_fleet()
    create_rate_card(
        actor=cast.fiona, gpu_model="T4", currency="USD", price_per_ge_hour=D("0.45"), effective_from=MARCH
    )
    for h in range(6):
        meter_allocation_hour(cluster_id=fleet.cluster.pk, hour=HOUR + timedelta(hours=h), now=LATER)
    close_march(cast)
    return fleet


@pytest.fixture
def eager_tasks():
    """Queued tasks run where they are queued, as a worker would run them."""
    before = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = True
    yield
    current_app.conf.task_always_eager = before


def _changed(fleet, *times):
    """What the sync does when it opens or closes an interval in an hour already over."""
    change = mark_changed_hours(cluster_id=fleet.cluster.pk, times=times, now=LATER)
    assert change is not None
    return change


def test_a_late_allocation_later_learnt_shorter_is_credited_and_nets_to_the_cent(t4_month, cast):
    # A replica (1/4 GE) of the T4, learnt of after March closed as held 10:00-16:00: six hours alone
    # on the card, 0.25 card-h each: 1.5 card-h x 0.45 = 0.675 -> 0.68 booked in April (the issue's
    # figures), and the card's idle 6 x -0.25 = -1.5 -> -0.675 -> -0.68.
    pod = hold(t4_month, tenant=cast.nlp, pool="t4-ts", name="n-late", ge="0.25",
               start=HOUR, end=HOUR + timedelta(hours=6))  # fmt: skip
    first = _changed(t4_month, pod.started_at)
    assert (first.first_hour, first.end_hour) == (HOUR, datetime(2025, 4, 2, tzinfo=UTC))
    done = remeter_changed_hours_task(first.pk)
    assert (done["hours"], done["adjustments"]) == (6, 12)  # six metered hours: the share and the idle
    april = build_period_report(period_id=BillingPeriod.objects.get(label="2025-04").pk)
    assert lines(april, "adjustment") == {("nlp", "east/t4-ts"): D("0.68")}
    assert lines(april, "idle_adjustment") == {("", "east/t4-ts"): D("-0.68")}
    # Then the sync learns it ended at 12:00: two hours, 0.5 card-h, 0.225 -> 0.22 by hand. The four
    # hours 12:00-16:00 exist only as April's adjustments (March never had a row of this pod): each is
    # credited -0.25, and the idle given back +0.25. April: 1.5 - 1.0 = 0.5 card-h -> 0.22; idle
    # -1.5 + 1.0 = -0.5 -> -0.225 -> -0.22.
    Allocation.objects.filter(pk=pod.pk).update(ended_at=HOUR + timedelta(hours=2))
    second = _changed(t4_month, HOUR + timedelta(hours=2))
    assert remeter_changed_hours_task(second.pk)["adjustments"] == 8
    april = build_period_report(period_id=april.pk)
    assert lines(april, "adjustment") == {("nlp", "east/t4-ts"): D("0.22")}
    assert lines(april, "idle_adjustment") == {("", "east/t4-ts"): D("-0.22")}
    credits = Adjustment.objects.filter(share_key=str(pod.pk), card_hours_delta__lt=0).order_by("hour")
    assert [(a.hour.hour, a.card_hours_delta) for a in credits] == [(h, D("-0.25")) for h in (12, 13, 14, 15)]
    # March stays as it closed.
    assert not UsageHour.objects.filter(share_key=str(pod.pk)).exists()


def test_running_the_re_meter_job_twice_books_nothing_twice(t4_month, cast, eager_tasks):
    pod = hold(t4_month, tenant=cast.nlp, pool="t4-ts", name="n-late", ge="0.25",
               start=HOUR, end=HOUR + timedelta(hours=1))  # fmt: skip
    change = _changed(t4_month, pod.started_at)
    assert remeter_late_changes_task() == [change.pk]  # the beat entry queues it (eager in tests)
    assert ChangedHours.objects.get(pk=change.pk).done_at is not None
    booked = Adjustment.objects.count()
    assert booked == 2  # +0.25 for nlp, -0.25 of idle, 10:00-11:00
    # The same change again, by id; a second record over the same hours; the beat entry again.
    assert remeter_changed_hours_task(change.pk)["skipped"] is True
    again = _changed(t4_month, pod.started_at)
    assert remeter_changed_hours_task(again.pk)["adjustments"] == 0
    assert remeter_late_changes_task() == []
    assert Adjustment.objects.count() == booked
    april = build_period_report(period_id=BillingPeriod.objects.get(label="2025-04").pk)
    # 0.25 x 0.45 = 0.1125 -> 0.11, and idle -0.11.
    assert lines(april, "adjustment") == {("nlp", "east/t4-ts"): D("0.11")}
    assert lines(april, "idle_adjustment") == {("", "east/t4-ts"): D("-0.11")}


def test_an_open_period_is_rewritten_in_place(cast):
    fleet = build_fleet()
    meter_allocation_hour(cluster_id=fleet.cluster.pk, hour=HOUR, now=LATER)
    pod = hold(fleet, tenant=cast.nlp, pool="t4-ts", name="n-late", ge="0.25", start=at(30), end=None)
    remeter_changed_hours_task(_changed(fleet, pod.started_at).pk)
    # Half an hour of a quarter card: 0.125 card-h, in March's own rows; the node's idle 1 -> 0.875.
    row = UsageHour.objects.get(share_key=str(pod.pk), hour=HOUR)
    assert row.card_hours == D("0.125")
    assert CapacityHour.objects.get(node_name="t4-ts-0", hour=HOUR).idle_card_hours == D("0.875")
    assert not Adjustment.objects.exists()


def test_the_job_is_in_the_beat_schedule():
    entries = {e["task"] for e in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "metering.remeter_late_changes" in entries
