"""A Kueue Workload held by gpuplatform's admission check for approval, in a real browser: rita
(admin of research, above nlp) finds it in her approval inbox, opens its page (which fits a 1400 px
window and a 375 px phone), is asked for a note, and approves it; the page then says who approved it
and why. Kueue's side of the journey is tests/quotas/test_kueue_check.py."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from gpuplatform.audit.models import AuditEvent
from tests.browser.test_page_widths import STICKING_OUT
from tests.quotas import factories as adm

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def fits(page: Page) -> None:
    scroll, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert int(scroll) <= int(inner), page.evaluate(STICKING_OUT)


def test_rita_approves_a_held_kueue_workload_from_her_inbox_with_a_note(
    transactional_db, cast, page: Page, login, shot
):
    # given nlp's Workload, 4 GE for 1 h, awaiting approval
    held = adm.workload_check(tenant=cast.nlp, namespace="team-nlp")
    held.approval_basis = [{"flavor": "h100", "threshold": 3, "resource": "nvidia.com/gpu", "requested": 4}]
    held.approvers = "a tenant-admin of research or acme (above nlp) or a platform-admin"
    held.amounts = {"h100": {"nvidia.com/gpu": "4"}}
    held.save()
    base = login(page, "rita")
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{base}/queues/")
    inbox = page.get_by_test_id("workload-inbox")
    expect(inbox).to_contain_text("nlp: team-nlp/job-train-1a2b3")
    expect(inbox).to_contain_text("4 nvidia.com/gpu on h100 (threshold 3)")
    shot(page, "inbox")

    # when she opens it from the inbox
    inbox.get_by_role("link", name="Review and decide").click()
    page.wait_for_url(f"{base}/queues/workloads/{held.pk}/")
    expect(page.get_by_test_id("check-message")).to_contain_text("awaiting approval by a platform-admin")
    expect(page.get_by_test_id("ge-hours")).to_contain_text("4.00 GE-h over 1.00 h")
    fits(page)
    page.set_viewport_size({"width": 375, "height": 812})
    fits(page)
    shot(page, "workload-phone")
    page.set_viewport_size({"width": 1400, "height": 900})
    # and approves without a note: she is asked for one, nothing changes
    form = page.get_by_test_id("decision-form")
    form.get_by_role("button", name="Approve").click()
    expect(page.locator(".messages, [role=alert]").first).to_contain_text("Say why")
    held.refresh_from_db()
    assert held.approval == "awaiting"
    # then with one
    page.get_by_test_id("decision-form").locator("textarea[name=note]").fill("quarter-end run")
    page.get_by_test_id("decision-form").get_by_role("button", name="Approve").click()

    # then the page says it is approved, by whom and why, and the audit log keeps it
    expect(page.get_by_test_id("approval")).to_contain_text("Approved by rita")
    expect(page.get_by_test_id("approval-note")).to_have_text("quarter-end run")
    expect(page.get_by_test_id("check-message")).to_have_text(
        "approved; it passes on gpuplatform's next check (within a minute)."
    )
    expect(page.locator("body")).to_contain_text("Approved, with your note.")
    shot(page, "approved")
    held.refresh_from_db()
    assert (held.approval, held.approved_by) == ("approved", cast.rita)
    assert AuditEvent.objects.get(action="kueue_workload.approved").after["note"] == "quarter-end run"
