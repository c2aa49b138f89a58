"""A platform-admin builds the catalogue through the forms in a real browser (issue 11, item 6)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from quotas.models import Budget, Flavor, Quota
from tests.inventory import factories as inv

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_platform_admin_creates_a_flavor_a_quota_and_a_budget(transactional_db, cast, page: Page, login):
    inv.pool("a100-pool")
    base = login(page, "pat")
    page.get_by_role("link", name="Catalogue").click()
    expect(page.get_by_test_id("empty")).to_contain_text("No flavors yet.")

    # a flavor
    page.get_by_test_id("new").click()
    page.fill("input[name=name]", "a100")
    page.fill("input[name=display_name]", "A100 80GB")
    page.select_option("select[name=pool]", label="east/a100-pool")
    page.fill("input[name=gpu_model]", "A100-80GB")
    page.fill("textarea[name=resources]", "nvidia.com/gpu = 1")
    page.click("button:text('Save')")
    expect(page.get_by_role("status")).to_contain_text("Created the flavor.")
    expect(page.get_by_test_id("catalogue")).to_contain_text("A100 80GB")

    # a quota, first with a resource the flavor does not count: the service's message, nothing made
    page.goto(f"{base}/catalogue/quotas/new/")
    page.select_option("select[name=tenant]", "research")
    page.select_option("select[name=flavor]", "a100")
    page.fill("input[name=resource]", "nvidia.com/mig-1g.10gb")
    page.fill("input[name=nominal]", "8")
    page.click("button:text('Save')")
    expect(page.get_by_test_id("error-resource")).to_have_text(
        "Flavor 'a100' has no resource 'nvidia.com/mig-1g.10gb'."
    )
    assert not Quota.objects.exists()
    page.fill("input[name=resource]", "")
    page.click("button:text('Save')")
    expect(page.get_by_test_id("catalogue")).to_contain_text("research")
    expect(page.get_by_test_id("catalogue")).to_contain_text("nvidia.com/gpu")

    # a budget for every flavor
    page.get_by_role("link", name="Budgets").click()
    page.get_by_test_id("new").click()
    page.select_option("select[name=tenant]", "research")
    page.fill("input[name=limit_ge_hours]", "5760")
    page.click("button:text('Save')")
    expect(page.get_by_test_id("catalogue")).to_contain_text("every flavor")
    expect(page.get_by_test_id("catalogue")).to_contain_text("5760.000")

    flavor = Flavor.objects.get(name="a100")
    assert Quota.objects.get(tenant=cast.research, flavor=flavor).nominal == 8
    assert Budget.objects.get(tenant=cast.research).limit_ge_hours == 5760
