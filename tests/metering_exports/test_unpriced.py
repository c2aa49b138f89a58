"""Unpriced usage is one thing everywhere: the reconciliation lists it, the XLSX roll-up counts it
(so a tenant's GE-hours there are the Usage page's), the overview says how many card-hours are
unpriced apart from charged and idle, and closing with it needs an acknowledgement, audited.

The month (one hour of March 2025): pool h100, 1 H100 card at 1.00 USD: vision holds 0.5 card-hour
(0.50 USD), idle 0.5 (0.50). Pool h200, 2 H200 cards, no rate card: globex-ml holds 1.5 card-hours,
0.5 idle: 2 card-hours unpriced in all.
"""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime
from decimal import Decimal as D

import pytest
from openpyxl import load_workbook

from gpuplatform.audit.models import AuditEvent
from metering.models import BillingPeriod
from metering.services.periods import close_billing_period, start_closing_period
from tests.metering import rows

pytestmark = pytest.mark.django_db

LATER = datetime(2025, 4, 3, tzinfo=UTC)


@pytest.fixture
def march(cast):
    h100 = rows.pool("h100")
    rows.capacity(h100, cards=1, idle="0.5")
    rows.held(h100, tenant=cast.vision, ge_hours="0.5")
    rows.card(h100, price="1.00")
    h200 = rows.Pool(cluster=h100.cluster, pool=rows.inv.pool("h200", on=h100.cluster), period=h100.period)
    h200.model = "H200-141GB"
    rows.capacity(h200, cards=2, idle="0.5", node="n1")
    rows.held(h200, tenant=cast.globex_ml, ge_hours="1.5")
    start_closing_period(actor=cast.fiona, period_id=h100.period.pk, now=LATER)  # its grace period
    return h100.period


def cells(html: str, testid: str) -> list[list[str]]:
    table = re.search(rf'data-testid="{testid}">(.*?)</table>', html, re.S).group(1)
    return [
        [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S)
    ]


def test_closing_with_unpriced_usage_needs_an_acknowledgement_recorded_in_the_audit(march, cast, api):
    refused = api(cast.fiona).post(f"/api/v1/billing-periods/{march.pk}/close/", {}, format="json")
    assert (refused.status_code, refused.json()["code"]) == (409, "unpriced_usage")
    assert "2 card-hours of 2025-03 have no rate card" in refused.json()["detail"]
    march.refresh_from_db()
    assert (march.state, march.lines.count()) == ("closing", 0)  # nothing written

    closed = api(cast.fiona).post(
        f"/api/v1/billing-periods/{march.pk}/close/", {"acknowledge_unpriced": True}, format="json"
    )
    assert closed.status_code == 200, closed.content
    event = AuditEvent.objects.get(action="billing_period.closed")
    assert (event.after["unpriced_card_hours"], event.after["unpriced_acknowledged"]) == ("2.000000000", True)


def test_a_month_with_no_unpriced_usage_closes_without_the_acknowledgement(cast):
    p = rows.pool("h100")
    rows.capacity(p, cards=1, idle="0.5")
    rows.held(p, tenant=cast.vision, ge_hours="0.5")
    rows.card(p, price="1.00")
    start_closing_period(actor=cast.fiona, period_id=p.period.pk, now=LATER)
    close_billing_period(actor=cast.fiona, period_id=p.period.pk, now=LATER)
    assert AuditEvent.objects.get(action="billing_period.closed").after["unpriced_acknowledged"] is False


def test_the_close_page_says_how_many_card_hours_are_unpriced_and_asks_to_acknowledge(march, cast, client):
    client.force_login(cast.fiona)
    page = client.get(f"/metering/periods/{march.pk}/").content.decode()
    assert "⚠ 2 card-hours of 2025-03 have no rate card" in page
    assert 'name="acknowledge_unpriced"' in page
    url = f"/metering/periods/{march.pk}/close/"
    refused = client.post(url, {"idle": "central", "confirm": "on"}, follow=True).content.decode()
    assert "have no rate card: add one, or acknowledge" in refused
    assert BillingPeriod.objects.get(pk=march.pk).state == "closing"
    client.post(url, {"idle": "central", "confirm": "on", "acknowledge_unpriced": "on"})
    assert BillingPeriod.objects.get(pk=march.pk).state == "closed"


def test_the_reconciliation_lists_the_unpriced_pool_in_its_own_row(march, cast, client):
    close_billing_period(actor=cast.fiona, period_id=march.pk, now=LATER, acknowledge_unpriced=True)
    march.refresh_from_db()
    (unpriced,) = march.summary["unpriced"]
    assert (
        unpriced["pool"].endswith("h200"),
        unpriced["charged_card_hours"],
        unpriced["idle_card_hours"],
    ) == (
        True,
        "1.500000000",
        "0.500000000",
    )
    client.force_login(cast.fiona)
    page = client.get(f"/metering/periods/{march.pk}/").content.decode()
    table = cells(page, "reconciliation")
    h100 = next(r for r in table if r and r[0].endswith("h100"))
    h200 = next(r for r in table if r and "h200" in r[0])
    assert h100[4] == "1.00 USD"
    assert (h200[1], h200[2], h200[3], h200[4]) == ("2", "1.5", "0.5", "unpriced: no rate card")
    # The note follows the table, not one pool's row.
    assert page.index('data-testid="unpriced-note"') > page.index(
        "</table>", page.index('data-testid="reconciliation"')
    )


def test_the_xlsx_roll_up_counts_unpriced_ge_hours_as_the_usage_page_does(march, cast, api, client):
    close_billing_period(actor=cast.fiona, period_id=march.pk, now=LATER, acknowledge_unpriced=True)
    got = api(cast.fiona).get("/api/v1/reports/export/?as=xlsx&period=2025-03")
    sheet = load_workbook(io.BytesIO(b"".join(got.streaming_content)), read_only=True)["Summary"]
    values = [list(r) for r in sheet.iter_rows(values_only=True)]
    start = next(i for i, r in enumerate(values) if r and r[0] == "Tenants, rolled up the tree")
    rollup: dict[str, D] = {}
    for r in values[start + 2 :]:
        if not r or r[0] is None:
            break
        rollup[r[0]] = rollup.get(r[0], D(0)) + D(str(r[3]))
    # globex-ml's 1.5 GE-hours are all unpriced: in the roll-up all the same (a row "unpriced").
    assert rollup["globex-ml"] == D("1.5") and rollup["vision"] == D("0.5")
    client.force_login(cast.fiona)
    usage = client.get("/metering/?period=2025-03").context["efficiency"]
    held = {r["tenant__slug"]: r["held"] for r in usage}
    assert {slug: rollup[slug] for slug in held} == held
    reconciliation_pools = [r[0] for r in values if len(r) > 1 and r[1] == "unpriced"]
    assert any(str(p).endswith("h200") for p in reconciliation_pools)


def test_the_overview_separates_charged_from_idle_and_counts_unpriced_card_hours(march, cast, client):
    close_billing_period(actor=cast.fiona, period_id=march.pk, now=LATER, acknowledge_unpriced=True)
    client.force_login(cast.fiona)
    html = client.get("/").content.decode()
    row = next(r for r in cells(html, "billing-periods") if r and r[0] == "2025-03")
    # Charged to tenants 0.50 (vision), idle 0.50, unpriced 1.5 + 0.5 = 2 card-hours.
    assert row[3:6] == ["0.50 USD", "0.50 USD", "2"]
