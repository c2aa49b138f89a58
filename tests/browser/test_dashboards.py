"""The dashboards in Chromium with data and without (issue 16): the overview's "what needs attention"
leads a tenant-admin to its tenant's dashboard, whose three charts draw (Chart.js on a canvas) with
every figure one hover away or in a table beside them; a platform-admin reads a pool's utilisation
heatmap cell by cell, and sees each panel's empty state on an empty tenant and an empty pool. The
server's clock stands at 11 March 2025 00:00 UTC, so the figures are the ones worked by hand in
tests/dashboards/test_tenant_dashboard.py and test_pool_dashboard.py."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
import time_machine
from playwright.sync_api import Page, expect

from inventory.models import Node
from policies.models import NodePolicyState, Rollout
from quotas.models import Budget, Quota
from tests.browser.conftest import log_in, watch
from tests.browser.test_page_widths import docs_shot
from tests.dashboards.test_pool_dashboard import card_use, metered, node_with_cards
from tests.dashboards.test_tenant_dashboard import GPU, at, request, used
from tests.inventory import factories as inv
from tests.policies import factories as pol
from tests.quotas import factories as adm

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NOW = datetime(2025, 3, 11, 0, 0, tzinfo=UTC)  # 10 days into March's 31


@pytest.fixture
def clock():
    with time_machine.travel(NOW, tick=False):
        yield


def hover_point(page: Page, canvas: str, *, dataset: int, index: int) -> list[str]:
    """Move the mouse onto one point of a chart and read the tooltip Chart.js shows there."""
    box = page.locator(canvas).bounding_box()
    assert box is not None
    point = page.locator(canvas).evaluate(
        "(el, [d, i]) => { const p = Chart.getChart(el).getDatasetMeta(d).data[i]; return [p.x, p.y]; }",
        [dataset, index],
    )
    page.mouse.move(box["x"] + point[0], box["y"] + point[1])
    page.wait_for_function(
        "el => Chart.getChart(el).tooltip.getActiveElements().length > 0",
        arg=page.locator(canvas).element_handle(),
    )
    return page.locator(canvas).evaluate("el => Chart.getChart(el).tooltip.body.flatMap(b => b.lines)")


def test_dashboards_draw_their_figures_and_say_when_there_are_none(
    transactional_db, cast, page: Page, live_server, shot, clock
):
    # vision: a 1 GE quota of shared-h100, a 50 GE-hour budget, five requests, two metered hours
    flavor = adm.flavor()
    Quota.objects.create(tenant=cast.vision, flavor=flavor, resource=GPU, nominal=1)
    Budget.objects.create(tenant=cast.vision, flavor=None, limit_ge_hours=Decimal(50))
    request(cast.vision, created=at(9, 8), admitted=at(9, 9), ended=at(9, 10))  # waited 3600 s
    request(cast.vision, created=at(10, 9, 50), admitted=at(10, 10), ended=at(10, 10, 30))  # 600 s
    request(cast.vision, created=at(10, 10, 10), admitted=at(10, 10, 15))  # 300 s, still held
    request(cast.vision, created=at(10, 11), admitted=at(10, 11, 2), ended=at(10, 12), ge=2)  # 120 s
    request(cast.vision, created=at(10, 23), admitted=None, state="pending")  # waiting for 60 min
    used(cast.vision, hour=at(10, 10), quantity="0.8")
    used(cast.vision, hour=at(10, 11), quantity="1.5", complete=False)
    # a pool of two cards: GPU-a0 used 0.5 + 0.25 of the card at 23:00, 0.45 with gaps at 22:00
    pool = inv.pool("h100")
    node_with_cards(pool, "gpu-a", ["GPU-a0", "GPU-a1"])
    eleven, ten = at(10, 23), at(10, 22)
    metered(pool, eleven)
    metered(pool, ten)
    card_use(pool, card="GPU-a0", hour=eleven, quantity="0.5", share="s1")
    card_use(pool, card="GPU-a0", hour=eleven, quantity="0.25", share="s2")
    card_use(pool, card="GPU-a0", hour=ten, quantity="0.45", share="s1", complete=False)
    pol.sharing_policy(pool)
    r1 = pol.revision(pool)
    rollout = Rollout.objects.create(pool=pool, revision=r1, state="running")
    NodePolicyState.objects.create(
        node=Node.objects.get(name="gpu-a"),
        desired_revision=r1,
        rollout=rollout,
        state="applied",
        applied_revision=1,
    )
    empty_pool = inv.pool("l40s")
    problems = watch(page)
    base = str(live_server.url)

    # alice: the overview says what needs her attention, and leads to vision's dashboard
    log_in(page, base, "alice")
    needs = page.get_by_test_id("needs-attention")
    # 17.18 GE-hours of 50 burned (34 %), forecast 17.18 x 31 / 10 = 53.27: over by the month's end
    expect(needs.get_by_test_id("attention-budgets-near")).to_contain_text(
        "1 budget near the limit or forecast over it"
    )
    expect(needs.get_by_test_id("attention-requests-pending-late")).to_contain_text(
        "1 request pending over 10 min — the oldest has waited 60 min"
    )
    expect(needs.get_by_test_id("attention-usage-incomplete")).to_contain_text("1 usage hour incomplete")
    shot(page, "alice-overview")
    needs.get_by_role("link", name="1 budget near the limit or forecast over it").click()
    assert page.url == f"{base}/tenants/{cast.vision.pk}/dashboard/"

    # three charts, each drawn by Chart.js, both axes titled: what the labels are, and the unit
    axes = {
        "holding-": ("Hour (day hour, UTC)", "GE"),
        "tenant-waits-data": ("Day", "min"),
        "tenant-budgets-data": ("Budget", "GE-hours"),
    }
    for canvas, titles in axes.items():
        chart = page.locator(f"canvas[data-chart^='{canvas}']")
        expect(chart).to_have_count(1)
        page.wait_for_function(
            "el => window.Chart && Chart.getChart(el) !== undefined && el.width > 0 && el.height > 0",
            arg=chart.element_handle(),
        )
        drawn = chart.evaluate(
            "el => { const c = Chart.getChart(el), s = c.options.scales;"
            " const v = c.options.indexAxis === 'x' ? 'y' : 'x', k = v === 'y' ? 'x' : 'y';"
            " return [s[k].title.text, s[v].title.text]; }"
        )
        assert tuple(drawn) == titles, (canvas, drawn)
    page.get_by_test_id(f"holding-{flavor.name}").scroll_into_view_if_needed()
    docs_shot(page, "tenant-dashboard-axes")
    holding = page.get_by_test_id(f"holding-{flavor.name}")
    expect(holding.locator("header")).to_contain_text(
        "nominal 1.0 GE · peak held 2.933 GE · peak borrowed 1.933 GE · used 2.3 GE-hours · 1 incomplete hour"
    )
    # 10 March 11:00 (the 36th of the 48 hours from 9 March 00:00): 2.933 GE held, 1.933 borrowed
    labels = holding.locator("canvas").evaluate("el => Chart.getChart(el).data.labels")
    index = labels.index("10 11:00")
    tooltip = hover_point(page, f"[data-testid='holding-{flavor.name}'] canvas", dataset=1, index=index)
    assert tooltip == ["nominal quota: 1 GE", "held: 2.933 GE", "borrowed: 1.933 GE", "used: 1.5 GE"]
    shot(page, "vision-dashboard-hover")
    # the waits and the budget, in the tables beside their charts
    waits = page.get_by_test_id("wait-days").locator("tbody tr")
    expect(waits).to_have_count(2)
    expect(waits.nth(0)).to_have_text("2025-03-09 1 3600 s 3600 s", use_inner_text=True)
    expect(waits.nth(1)).to_have_text("2025-03-10 3 300 s 600 s", use_inner_text=True)
    budget = page.get_by_test_id("budget-rows").locator("tbody tr")
    expect(budget).to_have_text(
        "every flavor (hard) 50.00 17.18 34 % 53.27 forecast over", use_inner_text=True
    )
    assert problems.take() == []
    page.get_by_test_id("logout").click()
    page.wait_for_url(f"{base}/login/")

    # pat: the pool's heatmap and policy state, then the empty states
    log_in(page, base, "pat")
    page.goto(f"{base}/inventory/pools/{pool.pk}/dashboard/")
    heat = page.get_by_test_id("heatmap")
    a0 = heat.locator("tr", has_text="gpu-a/gpu0").locator("td")
    expect(a0).to_have_count(24)
    expect(a0.nth(23)).to_have_text("75")
    expect(a0.nth(23)).to_have_attribute("title", "gpu-a/gpu0 2025-03-10 23:00 UTC: 75.0 % used")
    expect(a0.nth(22)).to_have_text("45?")
    expect(a0.nth(21)).to_have_attribute("title", "gpu-a/gpu0 2025-03-10 21:00 UTC: not metered")
    expect(heat.locator("tr", has_text="gpu-a/gpu1").locator("td").nth(23)).to_have_text("0")
    # (45 + 75 + 0 + 0) / 4 measured cells
    expect(page.get_by_test_id("pool-heatmap")).to_contain_text("Mean over measured cells: 30.0 %.")
    expect(page.get_by_test_id("pool-policy")).to_contain_text("1 of 1 node applied the desired revision.")
    shot(page, "pool-dashboard")

    page.goto(f"{base}/tenants/{cast.nlp.pk}/dashboard/")
    expect(page.get_by_test_id("tenant-holding")).to_contain_text(
        "No quota, no held request and no measured use"
    )
    expect(page.get_by_test_id("tenant-waits")).to_contain_text("No request of this tenant was admitted")
    expect(page.get_by_test_id("tenant-budgets")).to_contain_text("No budget set for this tenant")
    expect(page.locator("canvas")).to_have_count(0)
    shot(page, "empty-tenant-dashboard")
    page.goto(f"{base}/inventory/pools/{empty_pool.pk}/dashboard/")
    expect(page.get_by_test_id("pool-heatmap")).to_contain_text("No card in this pool")
    expect(page.get_by_test_id("pool-policy")).to_contain_text("No sharing policy declared")
    expect(page.get_by_test_id("pool-fragmentation")).to_contain_text("No free capacity to analyse")
    shot(page, "empty-pool-dashboard")
    assert problems.take() == []
