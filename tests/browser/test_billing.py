"""Finance closes a month and downloads its FOCUS export, in a real browser (issue 15)."""

from __future__ import annotations

from pathlib import Path

import pytest
from celery import current_app
from playwright.sync_api import Page, expect

from metering.models import BillingPeriod
from tests.metering import rows

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def eager_tasks():
    """The report job runs inside the live server's request, as a worker would run it after."""
    before = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = True
    yield
    current_app.conf.task_always_eager = before


def test_fiona_closes_march_and_downloads_its_focus_export(
    transactional_db, cast, page: Page, login, settings, tmp_path, eager_tasks
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
    page.check("input[name=confirm]")
    page.get_by_test_id("close").click()
    expect(page.locator(".messages")).to_contain_text("2025-03 is closed")
    expect(page.get_by_test_id("reconciliation")).to_contain_text("4.00 USD")
    assert BillingPeriod.objects.get(label="2025-03").state == "closed"
    page.get_by_test_id("build-report").click()
    expect(page.get_by_test_id("job").first).to_have_attribute("data-state", "done")
    with page.expect_download() as info:
        page.get_by_test_id("download-focus").first.click()
    download = info.value
    assert download.suggested_filename == "2025-03-focus.csv"
    text = Path(download.path()).read_text(encoding="utf-8")
    assert text.startswith("BilledCost,BillingAccountId,")
    assert sorted(line.split(",")[0] for line in text.splitlines()[1:]) == ["1.00", "1.00", "2.00"]
    page.screenshot(path="/tmp/gpuplatform-billing-closed.png", full_page=True)
    assert page.url.startswith(f"{base}/metering/periods/")
