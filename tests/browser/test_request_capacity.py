"""A tenant requests capacity, through the UI and through the API, and sees it admitted on the queue
page, in a real browser (issues 11 and 16)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from quotas.models import CapacityRequest
from tests.quotas.conftest import make_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_tenant_admin_requests_capacity_and_sees_it_admitted(
    transactional_db, cast, page: Page, login, shot
):
    make_catalog(cast)
    base = login(page, "alice")
    page.goto(f"{base}/queues/")
    page.get_by_role("link", name="Request capacity").click()
    page.select_option("select[name=tenant]", "vision")
    page.select_option("select[name=flavor]", "h100")
    page.fill("input[name=amount]", "2")
    page.fill("input[name=reason]", "training run")
    shot(page, "request-form")
    page.click("button:text('Request')")
    expect(page.locator("hgroup")).to_contain_text("admitted")
    expect(page.locator("ol.timeline")).to_contain_text("pending → admitted")
    shot(page, "admitted")
    assert CapacityRequest.objects.get(tenant=cast.vision).state == "admitted"


def test_a_request_made_through_the_api_shows_admitted_on_the_queue_page(
    transactional_db, cast, page: Page, login, http_api, shot
):
    # vision's quota is 4 GPUs of 16 in the pool; dana (a member) asks for 3 over HTTP
    make_catalog(cast)
    answer = http_api(cast.dana).post(
        "/api/v1/capacity-requests/",
        {"tenant": "vision", "flavor": "h100", "amount": 3, "reason": "nightly eval"},
        headers={"Idempotency-Key": "journey-dana-1"},
    )
    assert answer.status_code == 201, answer.text
    made = answer.json()
    assert made["state"] == "admitted"

    base = login(page, "dana")
    page.goto(f"{base}/queues/")
    decided = page.locator("table", has=page.get_by_role("columnheader", name="Why"))
    row = decided.locator("tbody tr", has_text="vision")
    expect(row).to_have_count(1)
    expect(row.locator(".badge")).to_have_text("admitted")
    expect(row).to_contain_text("3 nvidia.com/gpu")
    expect(page.locator("main")).to_contain_text("Nothing is waiting.")
    shot(page, "queue-shows-admitted")
    row.get_by_role("link", name="vision").click()
    expect(page.locator("hgroup")).to_contain_text("admitted")
    expect(page.locator("ol.timeline")).to_contain_text("pending → admitted")
    shot(page, "request-detail")
    assert page.url == f"{base}/queues/requests/{made['id']}/"
