"""A platform-admin keeps SLOs and their alert receivers in the browser (issue 27): adds a receiver,
creates an SLO that alerts it (a bad objective first: the message, nothing made), edits both (the
secret stays hidden and kept), deletes the SLO after a confirmation that says what goes with it, then
the receiver. Before this, every step needed the API."""

from __future__ import annotations

from decimal import Decimal

import pytest
from playwright.sync_api import Page, expect

from gpuplatform.audit.models import AuditEvent
from inventory.crypto import decrypt_text
from metering.slos.models import AlertReceiver, Slo
from tests.browser.test_page_widths import docs_shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HOOK = "http://127.0.0.1:9/hooks/t0ken"


def test_a_platform_admin_creates_edits_and_deletes_an_slo_and_its_receiver(
    transactional_db, cast, page: Page, login, shot
):
    login(page, "pat")
    page.click("nav >> text=SLOs")
    expect(page.get_by_test_id("no-slos")).to_be_visible()

    # a receiver, signed
    page.get_by_test_id("receivers-link").click()
    page.get_by_test_id("new-receiver").click()
    page.fill("input[name=name]", "oncall")
    page.fill("input[name=url]", HOOK)
    page.fill("input[name=secret]", "s3cret")
    page.click("button:text('Save')")
    expect(page.get_by_role("status")).to_contain_text("Added the alert receiver oncall.")
    expect(page.get_by_test_id("receivers")).to_contain_text("secret hidden")
    assert "s3cret" not in page.content()
    shot(page, "receiver-added")

    # an SLO: first an objective of 100 %, refused with a message and nothing made
    page.click("nav >> text=SLOs")
    page.get_by_test_id("new-slo").click()
    page.fill("input[name=name]", "queue-wait")
    page.select_option("select[name=sli]", "queue_wait")
    page.fill("input[name=objective_percent]", "100")
    page.fill("input[name=within_seconds]", "120")
    page.get_by_label("oncall").check()
    page.evaluate("window.stillThisPage = true")  # gone if the browser loaded a page afresh
    page.click("button:text('Save')")
    expect(page.get_by_test_id("error-objective_percent")).to_contain_text("strictly between 0 and 100")
    assert not Slo.objects.exists()
    page.fill("input[name=objective_percent]", "99.5")
    shot(page, "slo-form")
    page.click("button:text('Save')")
    expect(page.get_by_role("status")).to_contain_text("Created the SLO queue-wait.")
    expect(page.get_by_test_id("slo-evaluated")).to_contain_text("Never evaluated")
    slo = Slo.objects.get(name="queue-wait")
    # answered in place (htmx): the refusal, then the new SLO's page, without a page load; its URL pushed
    assert page.evaluate("window.stillThisPage") is True
    assert page.url.endswith(f"/slos/{slo.pk}/")
    assert (slo.objective, slo.params, [r.name for r in slo.receivers.all()]) == (
        Decimal("0.995"),
        {"within_seconds": 120},
        ["oncall"],
    )
    docs_shot(page, "slo-never-evaluated")

    # edited: a tighter objective over a week
    page.get_by_test_id("edit-slo").click()
    expect(page.locator("input[name=objective_percent]")).to_have_value("99.5")
    page.fill("input[name=objective_percent]", "99.9")
    page.fill("input[name=window_days]", "7")
    page.click("button:text('Save')")
    expect(page.get_by_role("status")).to_contain_text("Saved the SLO queue-wait.")
    expect(page.locator("hgroup")).to_contain_text("over 7 days")
    slo.refresh_from_db()
    assert (slo.objective, slo.window_days) == (Decimal("0.999"), 7)

    # the receiver renamed, its secret left empty: kept, never shown
    page.goto(page.url.split("/slos/")[0] + "/slos/receivers/")
    page.get_by_role("link", name="Edit oncall").click()
    expect(page.locator("input[name=secret]")).to_have_value("")
    page.fill("input[name=name]", "pager")
    page.click("button:text('Save')")
    expect(page.get_by_test_id("receivers")).to_contain_text("pager")
    receiver = AlertReceiver.objects.get()
    assert receiver.name == "pager" and decrypt_text(receiver.secret_encrypted) == "s3cret"

    # the SLO deleted: the confirmation says what goes with it
    page.get_by_role("link", name="queue-wait").click()
    page.get_by_test_id("delete-slo").locator("summary").click()
    expect(page.get_by_test_id("delete-slo")).to_contain_text(
        "deletes its measured samples, its alerts and their delivery log; its receivers stay"
    )
    shot(page, "slo-delete-confirmation")
    page.get_by_role("button", name="Delete queue-wait").click()
    expect(page.get_by_role("status")).to_contain_text("Deleted the SLO queue-wait")
    assert page.url.endswith("/slos/")
    expect(page.get_by_test_id("no-slos")).to_be_visible()
    assert not Slo.objects.exists()

    # and the receiver
    page.get_by_test_id("receivers-link").click()
    page.get_by_role("link", name="Edit pager").click()
    page.get_by_test_id("delete-receiver").locator("summary").click()
    expect(page.get_by_test_id("delete-receiver")).to_contain_text("No SLO alerts it")
    page.get_by_role("button", name="Delete pager").click()
    expect(page.get_by_test_id("no-receivers")).to_be_visible()
    assert not AlertReceiver.objects.exists()
    actions = set(AuditEvent.objects.filter(actor=cast.pat).values_list("action", flat=True))
    assert {
        "slo.created",
        "slo.updated",
        "slo.deleted",
        "alert_receiver.updated",
        "alert_receiver.deleted",
    } <= actions
