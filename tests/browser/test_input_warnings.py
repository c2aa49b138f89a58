"""A platform-admin sets a quota of 500 H100 on a flavor whose pool has 24 (issue 27): the form warns
before saving, saves nothing, and saves on "Save anyway". Before this it was accepted without a word."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from quotas.models import Quota
from tests.browser.test_page_widths import docs_shot
from tests.quotas.conftest import make_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_quota_above_the_flavors_capacity_is_warned_about_then_saved_anyway(
    transactional_db, cast, page: Page, login, shot
):
    make_catalog(cast, physical=24)
    base = login(page, "pat")

    page.goto(f"{base}/catalogue/quotas/new/")
    page.select_option("select[name=tenant]", "research")
    page.select_option("select[name=flavor]", "h100")
    page.fill("input[name=nominal]", "500")
    page.click("button:text('Save')")

    warning = page.get_by_test_id("input-warnings")
    expect(warning).to_contain_text("nothing is saved yet")
    expect(warning).to_contain_text(
        "A quota of 500 nvidia.com/gpu is more than flavor h100 can ever offer: its pool counts 24."
    )
    assert not Quota.objects.filter(tenant=cast.research).exists()
    expect(page.locator("input[name=nominal]")).to_have_value("500")  # kept, to save or change
    shot(page, "quota-warning")
    docs_shot(page, "quota-warning")

    page.get_by_test_id("save-anyway").click()
    expect(page.get_by_role("status")).to_contain_text("Created the quota.")
    assert Quota.objects.get(tenant=cast.research).nominal == 500
