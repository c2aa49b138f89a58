"""A node whose ResourceSlice consumes a counter its pool does not declare: the sync's issue is listed
with the node's own parse issues, each fitting a 1400 px window and a 375 px phone."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from inventory.models import Node, ResourceSlice
from tests.browser.conftest import watch
from tests.policies.factories import h100_pool

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("width", [1400, 375])
def test_a_slice_issue_shows_on_its_node_page(transactional_db, cast, page: Page, login, shot, width):
    pool = h100_pool("gb200", nodes=1)
    node = Node.objects.get(pool=pool)
    device = "gpu-0-mig-1g10gb-19-0"
    ResourceSlice.objects.create(
        cluster=node.cluster,
        name=f"{node.name}-gpu.nvidia.com-x7k2q",
        driver="gpu.nvidia.com",
        pool_name=node.name,
        node_name=node.name,
        counters={
            "consumes": {device: {"gpu-0-counter-set": ["memory-slice-0", "nvlink-bandwidth"]}},
            "issues": [
                {
                    "severity": "error",
                    "code": "dra.counters.undeclared_counter",
                    "message": f"{device} consumes 'nvlink-bandwidth' of 'gpu-0-counter-set', "
                    "which declares no such counter",
                    "source": device,
                }
            ],
        },
    )
    page.set_viewport_size({"width": width, "height": 900})
    problems = watch(page)
    base = login(page, "pat")

    page.goto(f"{base}/inventory/nodes/{node.pk}/")
    issues = page.get_by_test_id("parse-issues")
    expect(issues).to_contain_text("dra.counters.undeclared_counter")
    expect(issues).to_contain_text(f"{node.name}-gpu.nvidia.com-x7k2q: {device}")
    scroll, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert scroll <= inner, (scroll, inner)
    shot(page, f"node {width}")
    assert problems.take() == []
