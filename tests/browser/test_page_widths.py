"""Pages fit the window and speak in figures people read (issue 27): every page the navigation reaches,
and one detail page of each kind (tenant, its dashboard, pool, its dashboard, node, a pool's sharing
policy, its revisions and a diff, a request, a billing period, a rollout, an SLO, the catalogue's forms),
is no wider than a 1400 x 900 window and prints no raw Decimal or error code; the overview fits a
375 x 812 phone, whose navigation folds behind a Menu button that opens and closes from the keyboard.

With GPUPLATFORM_DOCS_SCREENSHOTS=1 the run also refreshes the screenshots in docs/ui/ that
docs/ui.md shows."""

from __future__ import annotations

import os
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import Page, expect

from inventory.models import Allocation, Gpu, Node, ShareableUnit
from metering.models import BillingPeriod, Slo
from policies.models import PolicyRevision
from quotas.models import CapacityRequest, Quota
from tests.browser.conftest import watch
from tests.inventory import factories as inv
from tests.metering import rows
from tests.policies import factories as pol
from tests.policies_agents import factories as ag
from tests.quotas.conftest import make_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DOCS_SHOTS = Path(__file__).resolve().parents[2] / "docs" / "ui"
# A figure printed at full precision ("34.353584999999990", "0.142857") or a stable error code
# ("policy.replicas_too_low") in the text of a page: what the filters of ui_format keep out.
RAW_DECIMAL = re.compile(r"(?<![\w.])\d+\.\d{4,}(?![\w.])")
ERROR_CODE = re.compile(r"\b(?:policy|quota|admission|request)\.[a-z]+_[a-z_]+\b")


def links(page: Page, selector: str) -> list[str]:
    found = page.locator(selector)
    return [href for i in range(found.count()) if (href := found.nth(i).get_attribute("href"))]


def width(page: Page) -> tuple[int, int]:
    scroll, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    return int(scroll), int(inner)


# The elements that stick out of the window, outermost first: what a failure names.
STICKING_OUT = """
() => {
  const out = (e) => e.getBoundingClientRect().right > window.innerWidth + 1;
  const scrolls = (e) => ["auto", "scroll", "hidden"].includes(getComputedStyle(e).overflowX);
  const inScroller = (e) => { if (getComputedStyle(e).position === "absolute") return false;
    for (let a = e.parentElement; a; a = a.parentElement) {
      if (a === document.body) return false; if (scrolls(a)) return true; } return false; };
  const name = (e) => `${e.tagName.toLowerCase()}${e.id ? "#" + e.id : ""}.${[...e.classList].join(".")}`;
  return [...document.querySelectorAll("body *")]
    .filter((e) => out(e) && !inScroller(e) && !(e.parentElement && out(e.parentElement)))
    .slice(0, 5)
    .map((e) => `${name(e.parentElement)} > ${name(e)} ${Math.round(e.getBoundingClientRect().right)} px`);
}
"""


def docs_shot(page: Page, name: str) -> None:
    """A small PNG of what the window shows, for docs/ui.md (only when asked: it rewrites docs/)."""
    if os.environ.get("GPUPLATFORM_DOCS_SCREENSHOTS") == "1":
        DOCS_SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(DOCS_SHOTS / f"{name}.png"), full_page=False)


def mig_node(cast: Any) -> Node:
    """An H100 node under MIG mixed with two cards: 4 x 1g.10gb and 2 x 3g.40gb, vision and nlp
    holding one 1g.10gb each."""
    node = Node.objects.create(
        cluster=inv.cluster(),
        pool=inv.pool(),
        name="gpu-mig-0",
        product="NVIDIA-H100-80GB-HBM3",
        model_key="H100-80GB",
        gpu_count=2,
        mig_strategy="mixed",
        ready=True,
    )
    for index in (0, 1):
        Gpu.objects.create(
            node=node, index=index, product=node.product, model_key="H100-80GB", mig_enabled=True
        )
    for profile, count, ge in (("1g.10gb", 4, "0.142857"), ("3g.40gb", 2, "0.428571")):
        ShareableUnit.objects.create(
            cluster=node.cluster,
            node=node,
            key=f"node/{node.name}/nvidia.com/mig-{profile}/-/{profile}/0",
            kind="mig_instance",
            resource_name=f"nvidia.com/mig-{profile}",
            count=count,
            ge_each=Decimal(ge),
            model_key="H100-80GB",
            mig_profile=profile,
        )
    for tenant, name in ((cast.vision, "train-1"), (cast.nlp, "train-2")):
        Allocation.objects.create(
            cluster=node.cluster,
            tenant=tenant,
            namespace=f"team-{tenant.slug}",
            holder_kind="Pod",
            holder_name=name,
            holder_uid=f"uid-{name}",
            unit_key="nvidia.com/mig-1g.10gb",
            resource_name="nvidia.com/mig-1g.10gb",
            count=1,
            ge=Decimal("0.142857"),
            model_key="H100-80GB",
            node=node,
            node_name=node.name,
            pool=node.pool,
            started_at=timezone.now(),
        )
    return node


def seed(cast: Any, http_api: Any) -> dict[str, str]:
    """Data on every page: quotas, an admitted and a waiting request, a metered and priced month, two
    SLOs, a declared and published sharing policy, a rollout, a MIG node. Returns a detail page of
    each kind."""
    catalog = make_catalog(cast)
    Quota.objects.filter(pk=catalog.vision_quota.pk).update(nominal=Decimal("5000.000"))
    api = http_api(cast.alice)
    for key, amount in (("widths-1", 2), ("widths-2", 40)):
        made = api.post(
            "/api/v1/capacity-requests/",
            {"tenant": "vision", "flavor": "h100", "amount": amount},
            headers={"Idempotency-Key": key},
        )
        assert made.status_code == 201, made.text
    metered = rows.pool("a100")
    rows.capacity(metered, cards=2, idle="0.5")
    rows.held(metered, tenant=cast.vision, ge_hours="34.353584999999990")
    rows.card(metered, price="1.600000")
    Slo.objects.create(
        name="queue-wait", sli="queue_wait", objective=Decimal("0.999"), params={"seconds": 600}
    )
    Slo.objects.create(name="gpu-health", sli="gpu_health", objective=Decimal("0.995"), params={})
    policy_pool = pol.h100_pool("h100", nodes=2)
    pol.sharing_policy(policy_pool)
    revision = pol.revision(policy_pool)
    rollout = ag.rollout()
    node = mig_node(cast)
    waiting = CapacityRequest.objects.get(idempotency_key="widths-2")
    return {
        "tenant": reverse("tenant-detail", args=[cast.vision.pk]),
        "tenant dashboard": reverse("tenant-dashboard", args=[cast.vision.pk]),
        "pool": reverse("inventory-pool", args=[catalog.pool.pk]),
        "pool dashboard": reverse("pool-dashboard", args=[policy_pool.pk]),
        "node": reverse("inventory-node", args=[node.pk]),
        "sharing policy": reverse("policies-pool", args=[policy_pool.pk]),
        "revisions": reverse("policies-revisions", args=[policy_pool.pk]),
        "diff": reverse("policies-diff", args=[revision.pk]),
        "request": reverse("queues-request", args=[waiting.pk]),
        "period": reverse("metering-period", args=[BillingPeriod.objects.get().pk]),
        "rollout": reverse("policy-rollout", args=[rollout.pk]),
        "slo": reverse("slo-detail", args=[Slo.objects.get(name="queue-wait").pk]),
        "rate cards": reverse("metering-rate-cards"),
        "new quota": reverse("catalogue-create", args=["quotas"]),
        "quota": reverse("catalogue-edit", args=["quotas", catalog.vision_quota.pk]),
        "request form": reverse("queues-request-new"),
    }


def test_every_page_fits_1400_px_and_prints_figures_for_people(
    transactional_db, cast, page: Page, login, http_api, shot
):
    details = seed(cast, http_api)
    assert PolicyRevision.objects.exists()
    page.set_viewport_size({"width": 1400, "height": 900})
    problems = watch(page)
    base = login(page, "pat")

    sections = [href for href in links(page, "header nav a") if href.startswith("/")]
    seen: list[str] = []
    to_open = list(sections) + list(details.values())
    while to_open:
        href = to_open.pop(0)
        if href in seen or href.startswith("/api/"):
            continue
        seen.append(href)
        response = page.goto(f"{base}{href}")
        page.wait_for_load_state("networkidle")
        assert response is not None and response.status == 200, href
        if href in sections:  # a section's tabs are pages of the navigation too
            to_open += [t for t in links(page, "main nav a") if t.startswith("/") and t not in seen]
        assert problems.take() == [], href
        scroll, inner = width(page)
        if scroll > inner:
            shot(page, f"too-wide {href}")
        assert scroll <= inner, f"{href} is {scroll} px wide in {inner}: {page.evaluate(STICKING_OUT)}"
        text = page.locator("main").inner_text()
        assert not RAW_DECIMAL.findall(text), f"{href} prints raw figures: {RAW_DECIMAL.findall(text)}"
        assert not ERROR_CODE.findall(text), f"{href} prints error codes: {ERROR_CODE.findall(text)}"
    assert set(details.values()) <= set(seen)
    assert len(seen) > len(sections) + len(details)  # the tabs were opened as well

    # the figures, as people read them: objectives, GE-hours, money to the cent, quantities grouped
    page.goto(f"{base}/slos/")
    slos = page.get_by_test_id("slos")
    expect(slos.locator("tr", has_text="queue-wait")).to_contain_text("99.9 %")
    expect(slos.locator("tr", has_text="gpu-health")).to_contain_text("99.5 %")
    docs_shot(page, "slos")
    page.goto(f"{base}{details['rate cards']}")
    expect(page.get_by_test_id("rate-cards")).to_contain_text("1.60 USD")
    expect(page.get_by_test_id("rate-cards")).not_to_contain_text("1.600000")
    page.goto(f"{base}{reverse('metering-usage')}")
    held = page.get_by_test_id("efficiency").locator("span[title^='34.35358']")
    expect(held).to_have_text("34.354")  # the exact figure stays one hover (or the API) away
    page.goto(f"{base}/queues/quotas/")
    expect(page.locator("main")).to_contain_text("5,000")
    page.goto(f"{base}/queues/")
    expect(page.get_by_test_id("preemption-glossary")).to_have_count(1)  # explained once
    expect(page.get_by_test_id("queue-preemption")).not_to_contain_text("MayStopSearch")
    docs_shot(page, "queue")
    page.goto(f"{base}{details['node']}")
    docs_shot(page, "node")
    page.goto(f"{base}{details['sharing policy']}")
    page.locator("form.policy-form").scroll_into_view_if_needed()
    page.evaluate("document.querySelector('form.policy-form').scrollIntoView()")
    docs_shot(page, "sharing-policy-form")


def test_the_overview_fits_a_phone_and_its_menu_folds(transactional_db, cast, page: Page, login, http_api):
    seed(cast, http_api)
    page.set_viewport_size({"width": 375, "height": 812})
    base = login(page, "pat")
    page.goto(f"{base}/")
    page.wait_for_load_state("networkidle")
    scroll, inner = width(page)
    assert scroll <= inner, f"the overview is {scroll} px wide in {inner}: {page.evaluate(STICKING_OUT)}"

    toggle = page.get_by_test_id("nav-toggle")
    tenants = page.locator("#nav-links a", has_text="Tenants")
    expect(toggle).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(tenants).to_be_hidden()
    toggle.focus()
    page.keyboard.press("Enter")  # a real button: the keyboard opens it
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(tenants).to_be_visible()
    docs_shot(page, "overview-phone-menu")
    page.keyboard.press("Escape")
    expect(tenants).to_be_hidden()
    expect(toggle).to_be_focused()
    assert width(page)[0] <= inner

    # at desktop width the sections are in view and the button is not
    page.set_viewport_size({"width": 1280, "height": 900})
    expect(toggle).to_be_hidden()
    expect(tenants).to_be_visible()
