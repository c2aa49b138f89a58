"""The cost pages of issue 32 in Chromium at 1400 and 375 px: a department viewer's "Cost this month"
panel (month to date and forecast, figures of tests/metering/test_month_to_date.py) and its "My
costs" rows per team (tests/metering/test_cost_rollup.py), and finance's exchange-rate form on a
period's page. Each draws without a console error and without a horizontal scrollbar."""

from __future__ import annotations

import pytest
import time_machine
from playwright.sync_api import Page, expect

from metering.services.periods import ensure_period
from tests.browser.conftest import log_in, watch
from tests.metering.test_cost_rollup import build_closed_march
from tests.metering.test_month_to_date import NOW, build_month_so_far

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = ((1400, 900), (375, 812))


@pytest.fixture
def month_so_far(cast):
    return build_month_so_far(cast)


@pytest.fixture
def closed_march(cast):
    return build_closed_march(cast)


def fits(page: Page) -> bool:
    scroll, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    return int(scroll) <= int(inner)


def test_a_department_viewer_reads_this_months_cost_and_forecast(
    transactional_db, cast, month_so_far, page: Page, live_server, shot
):
    with time_machine.travel(NOW, tick=False):
        problems = watch(page)
        log_in(page, live_server.url, "rhea")
        for width, height in WIDTHS:
            page.set_viewport_size({"width": width, "height": height})
            page.goto(f"{live_server.url}/tenants/{cast.research.pk}/dashboard/")
            costs = page.get_by_test_id("tenant-costs")
            expect(costs).to_contain_text("782.25 USD")
            expect(costs.get_by_test_id("cost-rows")).to_contain_text("719.50 USD")
            drawn = page.locator('canvas[data-chart="tenant-costs-data"]').evaluate(
                "el => Chart.getChart(el).data.datasets.map(d => d.data)"
            )
            assert drawn == [[5.25, 2.5, 2.75], [782.25, 719.5, 62.75]]
            costs.scroll_into_view_if_needed()
            shot(page, f"cost-this-month-{width}")
            assert fits(page), f"the dashboard scrolls sideways at {width} px"
        assert problems.take() == []


def test_my_costs_rows_per_team_and_the_exchange_rate_form_fit_a_phone(
    transactional_db, cast, closed_march, page: Page, live_server, shot
):
    problems = watch(page)
    log_in(page, live_server.url, "rhea")
    for width, height in WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"{live_server.url}/metering/periods/")
        expect(page.get_by_test_id("my-costs")).to_contain_text("6.25 USD")
        shot(page, f"my-costs-{width}")
        assert fits(page), f"My costs scrolls sideways at {width} px"
    page.context.clear_cookies()
    log_in(page, live_server.url, "fiona")
    open_period = ensure_period(at=closed_march.period.ends_at)  # March is closed: April's form
    for width, height in WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"{live_server.url}/metering/periods/{open_period.pk}/")
        form = page.get_by_test_id("exchange-rate-form")
        expect(form).to_be_visible()
        form.scroll_into_view_if_needed()
        shot(page, f"exchange-rate-form-{width}")
        assert fits(page), f"the period page scrolls sideways at {width} px"
    form.locator("input[name=currency]").fill("EUR")
    form.locator("input[name=rate]").fill("1.0834")
    form.locator("input[name=source]").fill("ECB reference rate")
    form.locator("input[name=as_of]").fill("2025-03-31")
    form.get_by_role("button", name="Set the exchange rate").click()
    expect(page.get_by_test_id("exchange-rates")).to_contain_text("1.08340000")
    shot(page, "exchange-rate-set")
    assert problems.take() == []
