"""A platform-admin logs in, creates a tenant, then the catalogue it needs through the forms (a flavor,
the tenant's quota and its budget), in a real browser (issue 11, item 6; issue 16)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from quotas.models import Budget, Flavor, Quota
from tenants.models import Tenant
from tests.inventory import factories as inv
from tests.quotas.conftest import give_capacity

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_platform_admin_creates_a_tenant_a_flavor_its_quota_and_its_budget(
    transactional_db, cast, page: Page, login, shot
):
    give_capacity(inv.pool("a100-pool"), 8)  # room for robotics' 8: no warning to confirm
    base = login(page, "pat")

    # a team under research
    page.click("nav >> text=Tenants")
    page.get_by_test_id("tenant-tree").get_by_role("link", name="Research").click()
    page.get_by_role("button", name="Add child tenant").click()
    page.fill("input[name=slug]", "robotics")
    page.fill("input[name=display_name]", "Robotics")
    shot(page, "new-tenant")
    page.click("button:text('Save')")
    expect(page.locator(".messages")).to_contain_text("Created Robotics.")
    robotics = Tenant.objects.get(slug="robotics")
    assert robotics.parent_id == cast.research.pk
    shot(page, "tenant-created")

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
    page.select_option("select[name=tenant]", "robotics")
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
    expect(page.get_by_test_id("catalogue")).to_contain_text("robotics")
    expect(page.get_by_test_id("catalogue")).to_contain_text("nvidia.com/gpu")
    shot(page, "quota-created")

    # a budget for every flavor
    page.get_by_role("link", name="Budgets").click()
    page.get_by_test_id("new").click()
    page.select_option("select[name=tenant]", "robotics")
    page.fill("input[name=limit_ge_hours]", "5760")
    page.click("button:text('Save')")
    expect(page.get_by_test_id("catalogue")).to_contain_text("every flavor")
    expect(page.get_by_test_id("catalogue")).to_contain_text("5,760")
    shot(page, "budget-created")

    flavor = Flavor.objects.get(name="a100")
    assert Quota.objects.get(tenant=robotics, flavor=flavor).nominal == 8
    assert Budget.objects.get(tenant=robotics).limit_ge_hours == 5760
    # the tenant's page shows both
    page.goto(f"{base}/tenants/{robotics.pk}/")
    expect(page.locator("main")).to_contain_text("5,760")
    shot(page, "tenant-page")
