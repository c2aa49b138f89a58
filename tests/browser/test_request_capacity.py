"""A tenant requests capacity through the UI and sees it admitted, in a real browser (issue 11)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from quotas.models import CapacityRequest
from tests.quotas.conftest import make_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_tenant_admin_requests_capacity_and_sees_it_admitted(transactional_db, cast, page: Page, login):
    make_catalog(cast)
    base = login(page, "alice")
    page.goto(f"{base}/queues/")
    page.get_by_role("link", name="Request capacity").click()
    page.select_option("select[name=tenant]", "vision")
    page.select_option("select[name=flavor]", "h100")
    page.fill("input[name=amount]", "2")
    page.fill("input[name=reason]", "training run")
    page.click("button:text('Request')")
    expect(page.locator("hgroup")).to_contain_text("admitted")
    expect(page.locator("ol.timeline")).to_contain_text("pending → admitted")
    assert CapacityRequest.objects.get(tenant=cast.vision).state == "admitted"
