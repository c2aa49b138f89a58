"""A list of more than 1,000 rows pages in the browser: the audit log filtered to 1,201 events says
page 1 of 25 and 1,201 in all, the next page continues where the first stopped with the filter kept,
and the last page holds the one event left (24 x 50 + 1 = 1,201) (issue 16)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import Page, expect

from gpuplatform.audit.models import AuditEvent

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EVENTS = 1201
START = datetime(2025, 3, 1, tzinfo=UTC)


def test_the_audit_log_pages_through_1201_events(transactional_db, cast, page: Page, login, shot):
    AuditEvent.objects.bulk_create(
        AuditEvent(
            at=START + timedelta(seconds=i),
            actor_label="system",
            action="node.relabelled",
            object_type="inventory.node",
            object_id=str(i),
            object_repr=f"gpu-{i:04d}",
            after={"label": "nvidia.com/mig.config"},
        )
        for i in range(EVENTS)
    )
    base = login(page, "pat")
    page.click("nav >> text=Audit")
    page.select_option("select[name=action]", "node.relabelled")
    page.get_by_role("button", name="Filter").click()
    pager = page.get_by_role("navigation", name="pagination")
    rows = page.locator("main table tbody tr")

    # newest first: gpu-1200 down to gpu-1151 on page 1
    expect(pager).to_contain_text("Page 1 of 25")
    expect(page.get_by_test_id("pager-count")).to_have_text("(1,201 in all)")
    expect(rows).to_have_count(50)
    expect(rows.first).to_contain_text("gpu-1200")
    expect(rows.last).to_contain_text("gpu-1151")
    shot(page, "page-1")

    pager.get_by_role("link", name="Older →").click()
    expect(pager).to_contain_text("Page 2 of 25")
    expect(rows.first).to_contain_text("gpu-1150")
    expect(rows.last).to_contain_text("gpu-1101")
    assert "action=node.relabelled" in page.url and "page=2" in page.url  # the filter is kept
    shot(page, "page-2")

    page.goto(f"{base}/audit/?action=node.relabelled&page=25")
    expect(pager).to_contain_text("Page 25 of 25")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("gpu-0000")
    expect(pager.get_by_role("link", name="Older →")).to_have_count(0)
    shot(page, "last-page")
    pager.get_by_role("link", name="← Newer").click()
    expect(pager).to_contain_text("Page 24 of 25")
    expect(rows.first).to_contain_text("gpu-0050")
