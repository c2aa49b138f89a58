"""The report sums the ledger per price bucket (the period cut at every rate card change), in one
query or in slices alike: a price change splits one tenant's hours into two lines, an hour that
starts at the change takes the new price, and a change of another model's card cuts the period
without splitting this pool's lines.

Three hours of a 2-card H100 node around 2025-03-10 10:00, when H100 goes from 2.00 to 3.00 a GE-hour
(T4 changes price an hour later, at 11:00):

- 09:00: vision holds 1 GE and uses 0.6 of it, nlp holds 0.5; idle 0.5 card-hours.
- 10:00 and 11:00: vision holds 1 GE; idle 1 card-hour each.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal as D

import pytest
from django.db import transaction

from metering.models import RateCard, ReportLine
from metering.services.reports import build_period_report, ledger_mark, prepare_report, write_report
from tests.metering import rows
from tests.metering.factories import HOUR

pytestmark = pytest.mark.django_db

BEFORE = HOUR - timedelta(hours=1)
AFTER = HOUR + timedelta(hours=1)
MONTH = HOUR.replace(day=1, hour=0)


@pytest.fixture
def around_a_price_change(cast):
    p = rows.pool()
    RateCard.objects.create(
        gpu_model="H100-80GB",
        currency="USD",
        price_per_ge_hour=D("2.00"),
        effective_from=MONTH,
        effective_to=HOUR,
    )
    RateCard.objects.create(
        gpu_model="H100-80GB", currency="USD", price_per_ge_hour=D("3.00"), effective_from=HOUR
    )
    RateCard.objects.create(
        gpu_model="T4", currency="USD", price_per_ge_hour=D("0.40"), effective_from=MONTH, effective_to=AFTER
    )
    RateCard.objects.create(gpu_model="T4", currency="USD", price_per_ge_hour=D("0.50"), effective_from=AFTER)
    rows.capacity(p, cards=2, idle="0.5", hour=BEFORE)
    rows.held(p, tenant=cast.vision, ge_hours="1", hour=BEFORE)
    rows.used(p, tenant=cast.vision, ge_hours="0.6", hour=BEFORE)
    rows.held(p, tenant=cast.nlp, ge_hours="0.5", hour=BEFORE)
    for hour in (HOUR, AFTER):
        rows.capacity(p, cards=2, idle="1", hour=hour)
        rows.held(p, tenant=cast.vision, ge_hours="1", hour=hour)
    return p


# 0: the month in one scan; 1: each hour its own slice (the 10:00 and 11:00 hours of one price are
# read apart and added up); 24: a day a slice, as the demo reads SQLite. The same lines each way.
@pytest.mark.parametrize("slice_hours", [0, 1, 24])
def test_a_price_change_splits_a_tenants_hours_at_the_hour_it_starts(
    around_a_price_change, settings, slice_hours
):
    settings.REPORT_BUILD_SLICE_HOURS = slice_hours
    p = around_a_price_change
    read: list[tuple[int, int]] = []
    build_period_report(period_id=p.period.pk, progress=lambda done, of: read.append((done, of)))
    # one progress call per slice of the month (31 days of March), per cluster
    assert len(read) == {0: 1, 1: 31 * 24, 24: 31}[slice_hours] and read[-1][0] == read[-1][1]
    lines = [
        (line.kind, line.tenant_slug, line.unit_price, line.card_hours, line.used_ge_hours, line.amount)
        for line in ReportLine.objects.filter(period=p.period).order_by("line_no")
    ]
    # At 2.00: vision 1 -> 2.00 (0.6 used), nlp 0.5 -> 1.00, idle 0.5 -> 1.00 (2 card-hours: 4.00).
    # At 3.00, the 10:00 and 11:00 hours together although T4's change cuts them apart:
    # vision 2 -> 6.00, idle 2 -> 6.00 (4 card-hours: 12.00).
    assert sorted(lines, key=lambda line: (line[2], line[0], line[1])) == [
        ("charge", "nlp", D("2.00"), D("0.5"), None, D("1.00")),
        ("charge", "vision", D("2.00"), D("1"), D("0.6"), D("2.00")),
        ("idle", "", D("2.00"), D("0.5"), None, D("1.00")),
        ("charge", "vision", D("3.00"), D("2"), None, D("6.00")),
        ("idle", "", D("3.00"), D("2"), None, D("6.00")),
    ]
    p.period.refresh_from_db()
    (recon,) = p.period.summary["reconciliation"]
    # Physical: 2 cards x 1 hour x 2.00 + 2 cards x 2 hours x 3.00 = 16.00.
    assert [D(recon[k]) for k in ("card_hours", "physical", "lines_total", "residue")] == [
        D(6),
        D("16.00"),
        D("16.00"),
        D(0),
    ]
    rollups = {r["tenant"]: r["amount"] for r in p.period.summary["rollups"]}
    assert (rollups["vision"], rollups["nlp"]) == ("8.00", "1.00")


def test_distributed_idle_is_shared_at_each_price(around_a_price_change):
    p = around_a_price_change
    build_period_report(period_id=p.period.pk, idle="distributed")
    shares = {
        (line.tenant_slug, line.unit_price): (line.card_hours, line.amount)
        for line in ReportLine.objects.filter(period=p.period, kind="idle_share")
    }
    # At 2.00 the 0.5 idle card-hours go 2:1 to vision (1) and nlp (0.5); at 3.00 all 2 to vision.
    assert shares == {
        ("vision", D("2.00")): (D("0.333333333"), D("0.67")),
        ("nlp", D("2.00")): (D("0.166666667"), D("0.33")),
        ("vision", D("3.00")): (D("2"), D("6.00")),
    }


def test_a_report_prepared_before_the_lock_is_computed_again_if_the_ledger_changed_meanwhile(
    around_a_price_change, cast
):
    """Closing computes the final report before it takes the period's lock (a long write
    transaction stops every writer on SQLite), then stores it only if nothing it was read from
    changed: here nlp's late hour at 11:00 (0.5 GE at 3.00 = 1.50) lands between the two, and the
    stored report has it."""
    p = around_a_price_change
    prepared = prepare_report(period=p.period)
    unchanged = ledger_mark(period=p.period)
    assert prepared.mark == unchanged
    rows.held(p, tenant=cast.nlp, ge_hours="0.5", hour=AFTER)  # lands after the report was read
    assert ledger_mark(period=p.period) != unchanged
    with transaction.atomic():
        write_report(period=p.period, at=AFTER, prepared=prepared)
    nlp = ReportLine.objects.filter(period=p.period, tenant_slug="nlp", kind="charge")
    assert sorted((line.unit_price, line.amount) for line in nlp) == [
        (D("2.00"), D("1.00")),
        (D("3.00"), D("1.50")),
    ]

    # and a rate card changed meanwhile counts as a change too
    prepared = prepare_report(period=p.period)
    RateCard.objects.filter(gpu_model="H100-80GB", effective_to__isnull=True).update(
        price_per_ge_hour=D("4.00")
    )
    with transaction.atomic():
        write_report(period=p.period, at=AFTER, prepared=prepared)
    nlp = ReportLine.objects.filter(period=p.period, tenant_slug="nlp", kind="charge")
    assert sorted((line.unit_price, line.amount) for line in nlp) == [
        (D("2.00"), D("1.00")),
        (D("4.00"), D("2.00")),
    ]
