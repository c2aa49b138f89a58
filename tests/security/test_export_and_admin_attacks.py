"""Attacks through what finance downloads and through Django's /admin/ (issue #26, findings 4 and 9).

4: a tenant-admin types a formula as the tenant's cost centre; the CSV, FOCUS and XLSX exports must
   carry it as inert text (OWASP: a leading single quote; XLSX cells typed as strings), while the
   numbers, negative credits included, stay numbers.
9: a platform-admin's change through /admin/ (granting platform-admin above all) is in the audit log.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from openpyxl import load_workbook

from metering.models import ReportLine
from metering.services.periods import close_billing_period, ensure_period
from tenants.models import Tenant
from tests.metering import rows

pytestmark = pytest.mark.django_db

LATER = datetime(2025, 4, 3, tzinfo=UTC)
# What an attacker types as a cost centre, and what a spreadsheet must show instead.
PAYLOADS = {
    "vision-sec": '=HYPERLINK("http://x","y")',
    "nlp": "@SUM(1)",
    "research": "+1",
    "acme": "-1+1",
    "globex": "\t=1",
    "globex-ml": "\r=1",
}


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")


@pytest.fixture
def poisoned(cast, api):
    """A closed month with a line for each tenant whose cost centre is a formula, plus a negative
    credit. The first is typed by alice (tenant-admin of vision) on the child she creates through the
    API; the others are stored as they are (the API trims a leading tab or CR, other ways in may not)."""
    got = api(cast.alice).post(
        "/api/v1/tenants/",
        {"slug": "vision-sec", "display_name": "Sec", "parent": str(cast.vision.pk),
         "cost_centre": PAYLOADS["vision-sec"]},
        format="json",
    )  # fmt: skip
    assert got.status_code == 201, got.content
    tenants = [
        Tenant.objects.get(slug="vision-sec"),
        cast.nlp,
        cast.research,
        cast.acme,
        cast.globex,
        cast.globex_ml,
    ]
    for tenant in tenants[1:]:
        Tenant.objects.filter(pk=tenant.pk).update(cost_centre=PAYLOADS[tenant.slug])
    p = rows.pool()
    rows.capacity(p, cards=6, idle="0")
    for tenant in tenants:
        rows.held(p, tenant=tenant, ge_hours="1")
    rows.card(p, price="2.00")
    close_billing_period(actor=cast.fiona, period_id=p.period.pk, now=LATER)
    # A credit (a negative adjustment) in the open month after: a number, not text, in every file.
    ReportLine.objects.create(
        period=ensure_period(at=LATER), line_no=1, kind="adjustment", tenant=tenants[0], currency="USD",
        unit_price=Decimal("2"), ge_hours=Decimal("0"), card_hours=Decimal("0"), basis="allocation",
        amount_exact=Decimal("-12.34"), amount=Decimal("-12.34"), adjusts="2025-03", rate_card_ref="",
    )  # fmt: skip
    return p


def download(api, cast, fmt: str, period: str = "2025-03") -> bytes:
    got = api(cast.fiona).get(f"/api/v1/reports/export/?period={period}&as={fmt}")
    assert got.status_code == 200, got.content
    return b"".join(got.streaming_content)


def test_a_formula_as_cost_centre_is_inert_text_in_the_csv(poisoned, cast, api):
    records = list(csv.DictReader(io.StringIO(download(api, cast, "csv").decode(), newline="")))
    centres = {r["tenant"]: r["cost_centre"] for r in records if r["kind"] == "charge"}
    assert centres == {slug: "'" + payload for slug, payload in PAYLOADS.items()}
    credit = csv.DictReader(io.StringIO(download(api, cast, "csv", "2025-04").decode(), newline=""))
    assert [r["amount"] for r in credit] == ["-12.34"]  # a number still


def test_a_formula_as_cost_centre_is_inert_text_in_the_focus_file(poisoned, cast, api):
    records = list(csv.DictReader(io.StringIO(download(api, cast, "focus").decode(), newline="")))
    centres = sorted(r["x_CostCentre"] for r in records if r["x_LineKind"] == "charge")
    assert centres == sorted("'" + payload for payload in PAYLOADS.values())
    credit = csv.DictReader(io.StringIO(download(api, cast, "focus", "2025-04").decode(), newline=""))
    assert [r["BilledCost"] for r in credit] == ["-12.34"]


def test_a_formula_as_cost_centre_is_a_string_cell_not_a_formula_in_the_workbook(poisoned, cast, api):
    data = download(api, cast, "xlsx")
    with zipfile.ZipFile(io.BytesIO(data)) as book:
        sheets = [book.read(n) for n in book.namelist() if n.startswith("xl/worksheets/")]
    assert sheets and not any(b"<f>" in s or b"<f " in s for s in sheets)  # no formula anywhere
    lines = load_workbook(io.BytesIO(data))["Lines"]
    header = [c.value for c in next(lines.iter_rows(max_row=1))]
    centre, kind, amount = (header.index(n) for n in ("cost_centre", "kind", "amount"))
    body = list(lines.iter_rows(min_row=2))
    cells = [row[centre] for row in body if row[kind].value == "charge"]
    assert {c.data_type for c in cells} == {"s"}
    # (XML reads a carriage return back as a line feed)
    assert sorted(c.value for c in cells) == sorted("'" + p.replace("\r", "\n") for p in PAYLOADS.values())
    april = load_workbook(io.BytesIO(download(api, cast, "xlsx", "2025-04")))["Lines"]
    credit = next(april.iter_rows(min_row=2, max_row=2))[amount]
    assert (credit.value, credit.data_type) == (-12.34, "n")


def test_the_json_export_keeps_the_cost_centre_as_typed(poisoned, cast, api):
    """JSON is no spreadsheet: its consumers get the value itself."""
    records = json.loads(download(api, cast, "json"))
    assert {r["cost_centre"] for r in records if r["kind"] == "charge"} == set(PAYLOADS.values())
