"""Issue 30's node part in a browser: the pools list with its NVLink clique summary, a pool's nodes
grouped by clique, a node's topology and driver-managed MIG, and the sharing policy page that says why
the pool takes no MIG geometry, each fitting a 1400 px window and a 375 px phone."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from inventory.models import Node
from tests.browser.conftest import watch
from tests.policies.factories import h100_pool

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DOMAIN = "a9e3e4a1-5c1b-4f7c-9d5e-2b0c1f6d7e88"


def _fits(page: Page) -> None:
    scroll, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert scroll <= inner, (scroll, inner)


@pytest.mark.parametrize("width", [1400, 375])
def test_topology_and_driver_managed_mig_pages_fit(transactional_db, cast, page: Page, login, shot, width):
    pool = h100_pool("gb200", nodes=3)
    for i, node in enumerate(Node.objects.filter(pool=pool).order_by("name")):
        node.nvlink_clique = f"{DOMAIN}.{i // 2}" if i < 2 else ""
        node.topology = {"topology.kubernetes.io/zone": "us-east-1a", "example.com/rack": f"r{i // 2}"}
        node.driver_managed_mig = True
        node.save()
    first = Node.objects.filter(pool=pool).order_by("name").first()
    page.set_viewport_size({"width": width, "height": 900})
    problems = watch(page)
    base = login(page, "pat")

    page.goto(f"{base}/inventory/")
    expect(page.get_by_test_id("nvlink-gb200")).to_have_text("1 clique, 2 nodes · 1 node on no fabric")
    _fits(page)
    shot(page, f"pools {width}")

    page.goto(f"{base}/inventory/pools/{pool.pk}/")
    headings = page.get_by_test_id("clique")
    expect(headings).to_have_count(2)
    expect(headings.first).to_contain_text(f"{DOMAIN}.0")
    expect(headings.last).to_contain_text("No NVLink fabric")
    _fits(page)
    shot(page, f"pool {width}")

    page.goto(f"{base}/inventory/nodes/{first.pk}/")
    expect(page.get_by_test_id("topology")).to_contain_text("driver-managed (DRA driver, DynamicMIG)")
    _fits(page)
    shot(page, f"node {width}")

    page.goto(f"{base}/policies/pools/{pool.pk}/")
    expect(page.get_by_test_id("detected-mode")).to_have_text("driver-managed MIG (DRA driver, DynamicMIG)")
    expect(page.get_by_test_id("driver-managed-mig")).to_contain_text("No MIG geometry on this pool.")
    _fits(page)
    shot(page, f"policy {width}")
    assert problems.take() == []
