"""Onboarding a team in one flow (issue 27): from the parent's tenant page, one form creates the team's
tenant, namespace, quota (beside what the parent still has to give), queue, budget and members, and
the team's page shows them; a tenant-admin asking more than its tenant holds sees the refusal on the
flavor's row and nothing is created. The form fits a 1400 px window and a 375 px phone.

With GPUPLATFORM_DOCS_SCREENSHOTS=1 the run also refreshes docs/ui/onboarding-*.png."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import Page, expect

from quotas.models import Budget, Queue, Quota
from tenants.models import Membership, Tenant, TenantNamespace
from tests.browser.conftest import watch
from tests.browser.test_page_widths import DOCS_SHOTS, STICKING_OUT, width
from tests.quotas.conftest import GPU, make_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def docs_shot(page: Page, name: str) -> None:
    """The whole form, for docs/ui.md (only when asked: it rewrites docs/)."""
    if os.environ.get("GPUPLATFORM_DOCS_SCREENSHOTS") == "1":
        DOCS_SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(DOCS_SHOTS / f"{name}.png"), full_page=True)


def test_an_admin_onboards_a_team_in_one_flow_and_sees_it_on_the_tenant_page(
    transactional_db, cast, page: Page, login, shot
):
    catalog = make_catalog(cast)
    Quota.objects.create(tenant=cast.research, flavor=catalog.flavor, resource=GPU, nominal=6)
    page.set_viewport_size({"width": 1400, "height": 900})
    problems = watch(page)
    login(page, "pat")

    # from Research's page, one button opens the whole flow
    page.click("nav >> text=Tenants")
    page.get_by_test_id("tenant-tree").get_by_role("link", name="Research").click()
    page.get_by_test_id("onboard-team").click()
    expect(page.locator("h1")).to_have_text("Onboard a team under Research")
    h100 = page.locator('[data-testid=quota-rows] tr[data-flavor="h100"]')
    expect(h100.get_by_test_id("parent-has")).to_have_text("6")
    scroll, inner = width(page)
    assert scroll <= inner, f"the onboarding form is {scroll} px wide in a {inner} px window"

    page.fill("input[name=slug]", "speech")
    page.fill("input[name=display_name]", "Speech")
    page.fill("textarea[name=namespaces]", "team-speech")
    h100.locator("input").fill("4")
    page.fill("input[name=budget_ge_hours]", "250")
    page.fill("input[name=member_0_username]", "dana")
    page.select_option("select[name=member_0_role]", "tenant-admin")
    docs_shot(page, "onboarding-1400")
    shot(page, "onboarding-filled")
    page.get_by_role("button", name="Onboard the team").click()

    # the team's own page: the summary, its quota, its budget, its member and namespace
    expect(page.locator(".messages")).to_contain_text(
        "Onboarded Speech under Research: 1 namespace(s), 1 quota(s), queue default, a budget, 1 member(s)."
    )
    speech = Tenant.objects.get(slug="speech")
    assert page.url.endswith(f"/tenants/{speech.pk}/")
    quotas = page.get_by_test_id("tenant-quotas")
    expect(quotas.locator("tbody tr")).to_have_count(1)
    expect(quotas.locator("tbody tr td").nth(2)).to_have_text("4")
    expect(quotas).to_contain_text("250.00 GE-hours a month on every flavor (soft)")
    expect(page.get_by_test_id("members")).to_contain_text("dana")
    expect(page.locator("main")).to_contain_text("team-speech")
    shot(page, "team-page")
    # and under Research, which handed nothing down (a platform-admin's grant is not carved)
    page.get_by_role("link", name="Research").first.click()
    expect(page.locator("main")).to_contain_text("Speech")
    assert Quota.objects.get(tenant=cast.research).nominal == 6
    assert Queue.objects.get(tenant=speech).name == "default"
    assert Budget.objects.get(tenant=speech).limit_ge_hours == 250
    assert Membership.objects.get(tenant=speech).user == cast.dana
    assert TenantNamespace.objects.get(tenant=speech).namespace == "team-speech"
    assert problems.take() == []


def test_a_tenant_admin_cannot_grant_more_than_its_tenant_holds(
    transactional_db, cast, page: Page, login, shot
):
    make_catalog(cast)  # vision holds 4 h100
    base = login(page, "alice")

    page.goto(f"{base}/tenants/{cast.vision.pk}/")
    page.get_by_test_id("onboard-team").click()
    page.fill("input[name=slug]", "vision-cv")
    page.fill("input[name=display_name]", "CV")
    page.locator('[data-testid=quota-rows] tr[data-flavor="h100"] input').fill("5")
    page.fill("input[name=member_0_username]", "dana")
    page.get_by_role("button", name="Onboard the team").click()

    expect(page.get_by_test_id("form-error")).to_contain_text("Nothing was created.")
    expect(page.get_by_test_id("error-h100")).to_contain_text(
        "the parent holds 4 of nvidia.com/gpu on this flavor, and 5 more was asked for"
    )
    # what was typed is kept, to correct and submit again
    expect(page.locator("input[name=slug]")).to_have_value("vision-cv")
    shot(page, "over-grant-refused")
    assert not Tenant.objects.filter(slug="vision-cv").exists()
    assert Quota.objects.get(tenant=cast.vision).nominal == 4


def test_the_onboarding_form_fits_a_phone(transactional_db, cast, page: Page, login):
    make_catalog(cast)
    page.set_viewport_size({"width": 375, "height": 812})
    base = login(page, "rita")

    page.goto(f"{base}/onboarding/{cast.research.pk}/")

    expect(page.get_by_test_id("onboarding-form")).to_be_visible()
    scroll, inner = width(page)
    assert scroll <= inner, f"{scroll} px wide on a {inner} px phone: {page.evaluate(STICKING_OUT)}"
    docs_shot(page, "onboarding-375")
