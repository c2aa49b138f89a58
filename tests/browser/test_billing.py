"""Finance closes a month and downloads each of its exports, in a real browser (issues 15 and 16):
the CSV, the XLSX workbook and the FOCUS file the report job built, and the JSON the API streams; each
download is read back as its format (csv, openpyxl, json) and carries the same three lines."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import openpyxl
import pytest
from playwright.sync_api import Page, expect

from metering.models import BillingPeriod
from tests.metering import rows

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CSV_COLUMNS = [
    "period",
    "line_no",
    "kind",
    "tenant_id",
    "tenant",
    "tenant_path",
    "cost_centre",
    "pool",
    "flavor",
    "gpu_model",
    "basis",
    "currency",
    "unit_price",
    "ge_hours_allocated",
    "ge_hours_used",
    "efficiency",
    "card_hours_charged",
    "amount_exact",
    "amount",
    "adjusts",
    "rate_card",
]
# March's lines: vision held 1 GE-hour and nlp 0.5 of a 2-card hour at 2.00 a card-hour, 0.5 idle:
# vision 1 x 2.00 = 2.00, nlp 0.5 x 2.00 = 1.00, idle 0.5 x 2.00 = 1.00; 4.00 in all (2 cards x 2.00)
LINES = [("charge", "nlp", "1.00"), ("charge", "vision", "2.00"), ("idle", "", "1.00")]


def download(page: Page, testid: str) -> tuple[str, bytes]:
    with page.expect_download() as info:
        page.get_by_test_id(testid).first.click()
    got = info.value
    return got.suggested_filename, Path(got.path()).read_bytes()


def test_fiona_closes_march_and_downloads_every_export(
    transactional_db, cast, page: Page, login, settings, tmp_path, eager_tasks, shot
):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    p = rows.pool()
    rows.capacity(p, cards=2, idle="0.5")
    rows.held(p, tenant=cast.vision, ge_hours="1")
    rows.held(p, tenant=cast.nlp, ge_hours="0.5")
    rows.card(p, price="2.00")
    base = login(page, "fiona")
    page.click("nav >> text=Metering")
    page.get_by_role("link", name="Billing periods").click()
    page.get_by_role("link", name="2025-03").click()
    expect(page.get_by_test_id("close-panel")).to_contain_text("the database refuses it")
    shot(page, "march-open")
    page.get_by_test_id("start-closing").click()  # closing starts with the grace period
    page.check("input[name=confirm]")
    page.get_by_test_id("close").click()
    expect(page.locator(".messages")).to_contain_text("2025-03 is closed")
    expect(page.get_by_test_id("reconciliation")).to_contain_text("4.00 USD")
    assert BillingPeriod.objects.get(label="2025-03").state == "closed"
    shot(page, "march-closed")
    page.get_by_test_id("build-report").click()
    expect(page.get_by_test_id("job").first).to_have_attribute("data-state", "done")
    shot(page, "exports-ready")

    # CSV: the documented columns, one row per line
    name, body = download(page, "download-csv")
    assert name == "2025-03-report.csv"
    table = list(csv.DictReader(io.StringIO(body.decode("utf-8"))))
    assert list(table[0]) == CSV_COLUMNS
    assert sorted((r["kind"], r["tenant"], r["amount"]) for r in table) == LINES
    assert {r["tenant_path"] for r in table if r["tenant"]} == {
        "/acme/research/vision/",
        "/acme/research/nlp/",
    }

    # XLSX: a real workbook, a summary and the same lines as typed cells
    name, body = download(page, "download-xlsx")
    assert name == "2025-03-report.xlsx" and body[:2] == b"PK"
    book = openpyxl.load_workbook(io.BytesIO(body), read_only=True)
    assert book.sheetnames == ["Summary", "Lines"]
    header, *cells = list(book["Lines"].iter_rows(values_only=True))
    assert list(header) == CSV_COLUMNS
    at = {column: index for index, column in enumerate(header)}
    assert sorted((r[at["kind"]], r[at["tenant"]] or "", f"{r[at['amount']]:.2f}") for r in cells) == LINES
    assert all(isinstance(r[at["amount"]], int | float) for r in cells)

    # FOCUS 1.3: its columns (split cost allocation among them), the billed costs
    name, body = download(page, "download-focus")
    assert name == "2025-03-focus.csv"
    focus = list(csv.DictReader(io.StringIO(body.decode("utf-8"))))
    for column in (
        "BilledCost",
        "BillingCurrency",
        "ServiceProviderName",
        "AllocatedMethodId",
        "EffectiveCost",
    ):
        assert column in focus[0], column
    assert sorted(r["BilledCost"] for r in focus) == ["1.00", "1.00", "2.00"]
    assert {r["BillingCurrency"] for r in focus} == {"USD"}

    # JSON, from the API through the same session: an array of the same lines
    name, body = download(page, "download-json")
    assert name == "2025-03-lines.json"
    lines = json.loads(body)
    assert sorted((r["kind"], r["tenant"] or "", r["amount"]) for r in lines) == LINES
    shot(page, "downloaded")
    assert page.url.startswith(f"{base}/metering/periods/")
