"""The XLSX summary ends with a total per cost centre and a grand total, per currency: sums of the
period's rounded lines, so finance can tie a cost centre's statement to the workbook.

One hour of March 2025, pool h100, 4 H100 cards at 2.50 USD a card-hour (10.00 in all):
vision (cost centre CC-100) holds 1.5 card-hours = 3.75, nlp (CC-200) 1.0 = 2.50, globex-ml (no cost
centre) 0.5 = 1.25, idle 1.0 = 2.50 (3.75 + 2.50 + 1.25 + 2.50 = 10.00). Finance credits vision
-1.00 in the same month. By hand:
    CC-100              3.75 - 1.00 = 2.75
    CC-200                            2.50
    (no cost centre)                  1.25
    (platform: idle)                  2.50
    grand total  2.75 + 2.50 + 1.25 + 2.50 = 9.00  (= 10.00 of cards - 1.00 credited)
"""

from __future__ import annotations

import io
from decimal import Decimal as D

import pytest
from openpyxl import load_workbook

from metering.services.credits import book_credit
from metering.services.reports import build_period_report
from tests.metering import rows
from tests.metering.factories import HOUR

pytestmark = pytest.mark.django_db


@pytest.fixture
def march(cast):
    for tenant, centre in ((cast.vision, "CC-100"), (cast.nlp, "CC-200")):
        tenant.cost_centre = centre
        tenant.save(update_fields=["cost_centre"])
    h100 = rows.pool("h100")
    rows.capacity(h100, cards=4, idle="1.0")
    rows.held(h100, tenant=cast.vision, ge_hours="1.5")
    rows.held(h100, tenant=cast.nlp, ge_hours="1.0")
    rows.held(h100, tenant=cast.globex_ml, ge_hours="0.5")
    rows.card(h100, price="2.50")
    book_credit(
        actor=cast.fiona,
        tenant_id=cast.vision.pk,
        amount=D("-1.00"),
        currency="USD",
        reason="goodwill",
        now=HOUR,
    )
    return build_period_report(period_id=h100.period.pk, at=HOUR)


def summary_rows(content: bytes) -> list[list]:
    sheet = load_workbook(io.BytesIO(content), read_only=True)["Summary"]
    return [list(r) for r in sheet.iter_rows(values_only=True)]


def test_the_summary_totals_each_cost_centre_and_the_whole_period(march, cast, api):
    got = api(cast.fiona).get(f"/api/v1/reports/export/?as=xlsx&period={march.label}")
    assert got.status_code == 200
    values = summary_rows(b"".join(got.streaming_content))
    start = next(
        i for i, r in enumerate(values) if r and r[0] == "Totals per cost centre (sums of the rounded lines)"
    )
    assert values[start + 1][:3] == ["cost_centre", "currency", "amount"]
    body = [r[:3] for r in values[start + 2 : start + 7]]
    assert [(c, cur, D(str(a)).quantize(D("0.01"))) for c, cur, a in body] == [
        ("CC-100", "USD", D("2.75")),
        ("CC-200", "USD", D("2.50")),
        ("(no cost centre)", "USD", D("1.25")),
        ("(platform: idle, unassigned)", "USD", D("2.50")),
        ("Grand total", "USD", D("9.00")),
    ]


def test_a_tenants_workbook_carries_no_other_centres_totals(march, cast, api):
    got = api(cast.alice).get(f"/api/v1/reports/export/?as=xlsx&period={march.label}")
    assert got.status_code == 200
    values = summary_rows(b"".join(got.streaming_content))
    assert not any(r and r[0] in ("Grand total", "CC-200") for r in values)
