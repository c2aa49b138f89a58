"""Every page the navigation reaches (the sections and their tabs) opens in Chromium with data on it,
and nothing goes wrong that a person would see in the browser's console or network panel: no console
error, no script error, no failed request, no answer of 400 or more, no page wider than the window
(issue 16)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from playwright.sync_api import Page, expect

from metering.models import Slo
from tests.browser.conftest import watch
from tests.metering import rows
from tests.policies import factories as pol
from tests.quotas.conftest import make_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def links(page: Page, selector: str) -> list[str]:
    found = page.locator(selector)
    return [href for i in range(found.count()) if (href := found.nth(i).get_attribute("href"))]


def test_every_page_of_the_navigation_opens_clean(transactional_db, cast, page: Page, login, http_api, shot):
    # data on every section: a pool with capacity, quotas and an admitted request, a billed month,
    # an SLO, a pool with a declared and published sharing policy
    make_catalog(cast)
    made = http_api(cast.alice).post(
        "/api/v1/capacity-requests/",
        {"tenant": "vision", "flavor": "h100", "amount": 2},
        headers={"Idempotency-Key": "journey-nav-1"},
    )
    assert made.status_code == 201, made.text
    p = rows.pool("a100")
    rows.capacity(p, cards=2, idle="0.5")
    rows.held(p, tenant=cast.vision, ge_hours="1.5")
    rows.card(p, price="2.00")
    Slo.objects.create(
        name="queue-wait", sli="queue_wait", objective=Decimal("0.99"), params={"seconds": 600}
    )
    policy_pool = pol.h100_pool("h100", nodes=2)
    pol.sharing_policy(policy_pool)
    pol.revision(policy_pool)

    problems = watch(page)
    base = login(page, "pat")
    sections = [href for href in links(page, "header nav a") if href.startswith("/")]
    assert {
        "/",
        "/tenants/",
        "/queues/",
        "/inventory/",
        "/policies/",
        "/metering/",
        "/slos/",
        "/audit/",
    } <= set(sections)
    seen: list[str] = []
    to_open = list(sections)
    while to_open:
        href = to_open.pop(0)
        if href in seen:
            continue
        seen.append(href)
        response = page.goto(f"{base}{href}")
        page.wait_for_load_state("networkidle")
        assert response is not None and response.status == 200, href
        expect(page.locator("main, #swagger-ui").first).to_be_visible()
        if href in sections:  # a section's tabs are pages of the navigation too
            to_open += [t for t in links(page, "main nav a") if t.startswith("/") and t not in seen]
        shot(page, href.strip("/").replace("/", "-") or "overview")
        assert problems.take() == [], href
        width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert width[0] <= width[1], f"{href} is {width[0]} px wide in a {width[1]} px window"
    assert len(seen) > len(sections)  # the tabs were opened as well
