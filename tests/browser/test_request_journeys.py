"""The capacity request journeys of issue 27, in a real browser: alice asks for capacity in hours,
seeing what each flavor has free and how long she would wait, then cancels the request that waits,
in place; rita opens a request from her approval inbox, sees why it needs her, and approves it with a
note that the request then shows. With GPUPLATFORM_DOCS_SCREENSHOTS=1 they refresh docs/ui/."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from gpuplatform.audit.models import AuditEvent
from quotas.models import CapacityRequest, Flavor
from quotas.services.requests import submit_request
from tests.quotas.conftest import make_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DOCS_SHOTS = Path(__file__).resolve().parents[2] / "docs" / "ui"


def docs_shot(page: Page, name: str) -> None:
    """A PNG of what the window shows, for docs/ui.md (only when asked: it rewrites docs/)."""
    if os.environ.get("GPUPLATFORM_DOCS_SCREENSHOTS") == "1":
        DOCS_SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(DOCS_SHOTS / f"{name}.png"), full_page=False)


def test_alice_requests_capacity_in_days_then_cancels_it_in_place(
    transactional_db, cast, page: Page, login, shot
):
    # given: 16 H100; vision's quota 4 and nlp's 4; alice already holds vision's 4
    make_catalog(cast)
    submit_request(actor=cast.alice, tenant="vision", flavor="h100", amount=4)
    base = login(page, "alice")
    page.goto(f"{base}/queues/requests/new/")
    page.select_option("select[name=tenant]", "vision")
    page.fill("input[name=amount]", "5")
    page.locator("input[name=amount]").dispatch_event("change")
    outlook = page.get_by_test_id("outlook")
    # 4 - 4 = 0 of vision's own quota left; 16 - 4 = 12 free; 5 more waits (nothing holding ends)
    row = outlook.locator("tr[data-flavor=h100]")
    expect(row).to_contain_text("0 of 4")
    expect(row).to_contain_text("12 of 16")
    expect(row).to_contain_text("unknown: what holds it has no end time")
    page.fill("input[name=duration]", "2")
    page.select_option("select[name=duration_unit]", "days")
    page.fill("input[name=reason]", "ablation sweep")
    shot(page, "request-form-with-outlook")
    docs_shot(page, "request-form")
    page.click("button:text('Request')")
    expect(page.get_by_test_id("request-state")).to_have_text("pending")
    expect(page.locator("main")).to_contain_text("2 days")
    url = page.url

    # when: she cancels, confirming the consequence
    page.get_by_text("Cancel this request…").click()
    expect(page.get_by_test_id("end-request")).to_contain_text("gives up its place (#1)")
    shot(page, "cancel-confirmation")
    docs_shot(page, "request-cancel")
    page.get_by_role("button", name="Yes, cancel it").click()

    # then: the request shows cancelled in place (the same page, no reload), with the timeline
    expect(page.get_by_test_id("request-state")).to_have_text("cancelled")
    expect(page.get_by_test_id("result")).to_have_text("Cancelled.")
    expect(page.locator("ol.timeline")).to_contain_text("pending → cancelled")
    expect(page.get_by_text("Cancel this request…")).to_have_count(0)
    shot(page, "cancelled")
    assert page.url == url
    waited = CapacityRequest.objects.get(tenant=cast.vision, state="cancelled")
    assert (waited.amounts, waited.duration_seconds) == ({"nvidia.com/gpu": 5}, 2 * 86400)


def test_rita_approves_with_a_note_from_a_linked_request(transactional_db, cast, page: Page, login, shot):
    # given: h100 needs approval above 2 per subtree; dana (member of vision) asks 3
    catalog = make_catalog(cast)
    Flavor.objects.filter(pk=catalog.flavor.pk).update(approval_above=2)
    asked = submit_request(
        actor=cast.dana, tenant="vision", flavor="h100", amount=3, reason="please, it is urgent"
    ).request
    assert asked.approval == "awaiting"
    base = login(page, "rita")
    page.goto(f"{base}/queues/")
    inbox = page.get_by_test_id("approval-inbox")
    # why it needs approval: the threshold crossed, in figures; not the requester's own words
    expect(inbox).to_contain_text(
        "vision (and below) would hold 3 \u00d7 nvidia.com/gpu on h100 with this request of 3: above the "
        "flavor's approval threshold of 2."
    )
    expect(inbox).not_to_contain_text("please, it is urgent")
    shot(page, "inbox")
    docs_shot(page, "approval-inbox")

    # when: she opens the request from the inbox, and approves it with a note
    inbox.get_by_role("link", name="Review and decide").click()
    page.wait_for_url(f"{base}/queues/requests/{asked.pk}/")
    form = page.get_by_test_id("decision-form")
    form.get_by_role("button", name="Approve").click()
    expect(form).to_contain_text("Say why")  # a note is asked for: not a one-click approval
    form.locator("textarea[name=note]").fill("ok for the conference deadline")
    shot(page, "decision-with-note")
    docs_shot(page, "request-decision")
    form.get_by_role("button", name="Approve").click()

    # then: admitted in place, the note on the request, in its timeline and in the audit log
    expect(page.get_by_test_id("request-state")).to_have_text("admitted")
    expect(page.get_by_test_id("approval-note")).to_have_text("ok for the conference deadline")
    expect(page.get_by_test_id("approval")).to_contain_text("Approved by rita")
    shot(page, "approved")
    asked.refresh_from_db()
    assert (asked.state, asked.approval, asked.approved_by) == ("admitted", "approved", cast.rita)
    event = AuditEvent.objects.get(action="capacity_request.approved")
    assert event.after["note"] == "ok for the conference deadline"
