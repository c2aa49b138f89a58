"""Rate cards, the month's report to the cent, closing a period, late data, and the database guard."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal as D

import pytest
from django.db import IntegrityError, connection, transaction

from gpuplatform.audit.models import AuditEvent
from gpuplatform.errors import Conflict, Forbidden
from metering.models import Adjustment, BillingPeriod, PeriodState, RateCard, ReportLine, UsageHour
from metering.services.ledger import meter_allocation_hour
from metering.services.periods import close_billing_period, start_closing_period
from metering.services.rates import create_rate_card, end_rate_card
from metering.services.reports import build_period_report
from tests.metering.scenario import HOUR, at, build_fleet, hold, the_hour

pytestmark = pytest.mark.django_db

MARCH = datetime(2025, 3, 1, tzinfo=UTC)
LATER = datetime(2025, 4, 2, tzinfo=UTC)


@pytest.fixture
def priced(cast):
    fleet = build_fleet()
    fleet.allocations = the_hour(fleet, cast)
    create_rate_card(
        actor=cast.fiona,
        gpu_model="H100-80GB",
        currency="USD",
        price_per_ge_hour=D("2.50"),
        effective_from=MARCH,
    )
    create_rate_card(
        actor=cast.fiona, gpu_model="T4", currency="USD", price_per_ge_hour=D("0.40"), effective_from=MARCH
    )
    meter_allocation_hour(cluster_id=fleet.cluster.pk, hour=HOUR, now=LATER)
    return fleet


def lines_of(period):
    return [
        (line.kind, line.tenant_slug, line.pool_name, line.amount)
        for line in ReportLine.objects.filter(period=period).order_by("line_no")
    ]


def test_the_months_report_to_the_cent(priced, cast):
    period = build_period_report(period_id=BillingPeriod.objects.get(label="2025-03").pk)
    # Card-hours of tests/metering/scenario.py x 2.50 (H100) or 0.40 (T4), each line rounded once:
    # h100: vision 1 -> 2.50, nlp 0.5 -> 1.25, idle 0.5 -> 1.25 (2 cards: 5.00)
    # h100-hami: nlp 0.166666667 -> 0.4166666675 -> 0.42; vision 0.25 -> 0.625 -> 0.62 (half-even);
    #   idle 0.583333333 -> 1.4583333325 -> 1.46 (2.50)
    # h100-mig: nlp 0.375 -> 0.9375 -> 0.94; vision 0.5 -> 1.25; idle 0.125 -> 0.3125 -> 0.31 (2.50)
    # t4-mps: vision 0.1 -> 0.04; idle 0.9 -> 0.36 (0.40)
    # t4-ts: nlp 0.083333333 -> 0.0333333332 -> 0.03; vision 0.5 -> 0.20; idle 0.416666667 -> 0.17 (0.40)
    lines = lines_of(period)
    charges = {(slug, pool): amount for kind, slug, pool, amount in lines if kind == "charge"}
    idle = {pool: amount for kind, _, pool, amount in lines if kind == "idle"}
    assert charges == {
        ("vision", "east/h100"): D("2.50"),
        ("nlp", "east/h100"): D("1.25"),
        ("nlp", "east/h100-hami"): D("0.42"),
        ("vision", "east/h100-hami"): D("0.62"),
        ("nlp", "east/h100-mig"): D("0.94"),
        ("vision", "east/h100-mig"): D("1.25"),
        ("vision", "east/t4-mps"): D("0.04"),
        ("nlp", "east/t4-ts"): D("0.03"),
        ("vision", "east/t4-ts"): D("0.20"),
    }
    assert idle == {
        "east/h100": D("1.25"),
        "east/h100-hami": D("1.46"),
        "east/h100-mig": D("0.31"),
        "east/t4-mps": D("0.36"),
        "east/t4-ts": D("0.17"),
    }
    recon = {
        r["pool"]: (r["physical"], r["lines_total"], r["residue"], r["holds"])
        for r in period.summary["reconciliation"]
    }
    assert recon == {
        "east/h100": ("5.00", "5.00", "0.00", True),
        "east/h100-hami": ("2.50", "2.50", "0.00", True),
        "east/h100-mig": ("2.50", "2.50", "0.00", True),
        "east/t4-mps": ("0.40", "0.40", "0.00", True),
        "east/t4-ts": ("0.40", "0.40", "0.00", True),
    }
    rollups = {r["tenant"]: r["amount"] for r in period.summary["rollups"]}
    # vision 2.50 + 0.62 + 1.25 + 0.04 + 0.20 = 4.61; nlp 1.25 + 0.42 + 0.94 + 0.03 = 2.64
    assert rollups == {"acme": "7.25", "research": "7.25", "vision": "4.61", "nlp": "2.64"}


def test_a_price_change_mid_month_splits_the_hours(priced, cast):
    h100 = RateCard.objects.get(gpu_model="H100-80GB")
    end_rate_card(actor=cast.fiona, rate_card_id=h100.pk, effective_to=HOUR)
    create_rate_card(
        actor=cast.fiona, gpu_model="H100-80GB", currency="USD", price_per_ge_hour=D("3"), effective_from=HOUR
    )
    period = build_period_report(period_id=BillingPeriod.objects.get(label="2025-03").pk)
    charges = {(slug, pool): amount for kind, slug, pool, amount in lines_of(period) if kind == "charge"}
    assert charges[("vision", "east/h100")] == D("3.00")  # the metered hour is after the change
    assert [
        e.action for e in AuditEvent.objects.filter(action__startswith="rate_card.").order_by("at", "id")
    ] == [
        "rate_card.created",
        "rate_card.created",
        "rate_card.ended",
        "rate_card.created",
    ]


def test_overlapping_rate_cards_are_refused_by_the_service_and_by_the_database(priced, cast):
    with pytest.raises(Conflict, match="overlaps"):
        create_rate_card(
            actor=cast.fiona, gpu_model="T4", currency="USD", price_per_ge_hour=D(1), effective_from=HOUR
        )
    with (
        pytest.raises(IntegrityError, match="ratecard_no_overlap"),
        transaction.atomic(),
        connection.cursor() as cur,
    ):
        cur.execute(
            "INSERT INTO metering_ratecard (id, gpu_model, currency, price_per_ge_hour, basis,"
            " effective_from, note, created_at)"
            " VALUES (gen_random_uuid(), 'T4', 'USD', 1, 'allocation', %s, '', now())",
            [HOUR],
        )


def test_a_tenant_cannot_set_prices(priced, cast):
    with pytest.raises(Forbidden):
        create_rate_card(
            actor=cast.alice, gpu_model="T4", currency="USD", price_per_ge_hour=D(1), effective_from=LATER
        )


def test_closing_freezes_the_period_in_the_database(priced, cast):
    march = BillingPeriod.objects.get(label="2025-03")
    with pytest.raises(Conflict, match="not ended"):
        start_closing_period(actor=cast.fiona, period_id=march.pk, now=HOUR)
    start_closing_period(actor=cast.fiona, period_id=march.pk, now=LATER)
    with pytest.raises(Forbidden):
        close_billing_period(actor=cast.alice, period_id=march.pk, now=LATER)
    march = close_billing_period(actor=cast.fiona, period_id=march.pk, now=LATER)
    assert march.state == PeriodState.CLOSED
    assert ReportLine.objects.filter(period=march).count() == 14
    with pytest.raises(Conflict, match="already closed"):
        close_billing_period(actor=cast.fiona, period_id=march.pk, now=LATER)
    # The guard is the database's: raw SQL, no model code, is refused too.
    for sql in (
        "UPDATE metering_usagehour SET card_hours = 0 WHERE period_id = %s",
        "DELETE FROM metering_reportline WHERE period_id = %s",
        "UPDATE metering_reportline SET amount = 0 WHERE period_id = %s",
        "UPDATE metering_billingperiod SET state = 'open' WHERE id = %s",
    ):
        with pytest.raises(IntegrityError, match="billing period 2025-03 is closed"), transaction.atomic():
            connection.cursor().execute(sql, [march.pk])
    assert [
        e.action for e in AuditEvent.objects.filter(action__startswith="billing_period.").order_by("at", "id")
    ] == [
        "billing_period.closing",
        "billing_period.closed",
    ]


def test_late_data_becomes_an_adjustment_in_the_next_open_period_once(priced, cast):
    march_id = BillingPeriod.objects.get(label="2025-03").pk
    start_closing_period(actor=cast.fiona, period_id=march_id, now=LATER)
    march = close_billing_period(actor=cast.fiona, period_id=march_id, now=LATER)
    # An nlp pod holding one whole GPU on the h100 node all hour shows up after the close.
    late = hold(priced, tenant=cast.nlp, pool="h100", name="n-late", ge="1", start=at(0), end=at(60))
    # 10:00-10:30: 3 GPUs on 2 cards, each charged 2/3 x 0.5 h = 1/3; 10:30-11:00: vision and the late
    # pod 0.5 each. vision 1 -> 5/6 (-1/6), n-h100 0.5 -> 1/3 (-1/6), n-late 0 -> 5/6: +1/2 in all.
    # The node's idle falls by as much: 0.5 -> 0 (-1/2), booked against idle/h100-0.
    result = meter_allocation_hour(cluster_id=priced.cluster.pk, hour=HOUR, now=LATER)
    assert result.adjustments == 4
    again = meter_allocation_hour(cluster_id=priced.cluster.pk, hour=HOUR, now=LATER)
    assert again.adjustments == 0  # net of what was booked: nothing is billed twice
    april = BillingPeriod.objects.get(label="2025-04")
    deltas = {
        a.share_key: a.card_hours_delta
        for a in Adjustment.objects.filter(period=april, meter="allocated_ge_hours")
    }
    assert sum(deltas.values()) == D("0.5")
    # 5/6 to 18 places; the 1e-18 goes to one of three ties
    assert deltas[str(late.pk)] in (D("0.833333333333333333"), D("0.833333333333333334"))
    idle = Adjustment.objects.get(period=april, meter="idle_card_hours")
    assert (idle.share_key, idle.card_hours_delta, idle.tenant_id) == ("idle/h100-0", D("-0.5"), None)
    assert all(a.adjusts_period == march for a in Adjustment.objects.all())
    assert UsageHour.objects.filter(share_key=str(late.pk)).count() == 0  # March stays as it closed
    april = build_period_report(period_id=april.pk)
    adjustments = {slug: amount for kind, slug, _, amount in lines_of(april) if kind == "adjustment"}
    # vision -1/6 x 2.50 = -0.4166... -> -0.42; nlp (-1/6 + 5/6) x 2.50 = 1.666... -> 1.67
    assert adjustments == {"vision": D("-0.42"), "nlp": D("1.67")}
    # idle -1/2 x 2.50 = -1.25: the h100 pool recovers 5.00 across March and April, no more.
    assert [(pool, amount) for kind, _, pool, amount in lines_of(april) if kind == "idle_adjustment"] == [
        ("east/h100", D("-1.25"))
    ]
    assert {line.adjusts for line in ReportLine.objects.filter(period=april, kind="adjustment")} == {
        "2025-03"
    }
