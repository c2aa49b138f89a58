"""A tainted DRA device and a HAMi-cordoned GPU as people see them (issue 30): the node page lists each
with its taints and whether it is free capacity, the pool page and the overview say why capacity is
not free; each fits a 1400 px window and a 375 px phone."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from inventory.models import Gpu, ShareableUnit
from tests.inventory import factories as inv

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

XID = {
    "key": "gpu.nvidia.com/xid",
    "value": "79",
    "effect": "NoSchedule",
    "time_added": "2026-11-30T08:14:02Z",
    "source": "",
}
ODD = {
    "key": "example.com/odd",
    "value": "1",
    "effect": "Evict",
    "time_added": "",
    "source": "DeviceTaintRule odd",
}


def _fits(page: Page) -> None:
    scroll, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert scroll <= inner


def test_taints_and_cordons_on_the_node_pool_and_overview_pages(page: Page, login, cast, shot):
    node = inv.node("gpu-dra-7")
    node.gpu_count = 2
    node.save()
    for index in (0, 1):
        Gpu.objects.create(
            node=node, index=index, product=node.product, model_key="H100-80GB", healthy=index != 0
        )
    for index, taints, why in ((0, [XID], "tainted by gpu.nvidia.com/xid=79:NoSchedule"), (1, [ODD], "")):
        ShareableUnit.objects.create(
            cluster=node.cluster,
            node=node,
            key=f"dra/gpu.nvidia.com/gpu-dra-7/gpu-{index}@s",
            kind="dra_device",
            resource_name="gpu.nvidia.com",
            ge_each=Decimal(1),
            model_key="H100-80GB",
            driver="gpu.nvidia.com",
            pool_name="gpu-dra-7",
            device_name=f"gpu-{index}",
            device_uuid=f"GPU-000{index}",
            attributes={"type": "gpu", "uuid": f"GPU-000{index}"},
            taints=taints,
            unavailable=why,
        )
    base = login(page, "pat")
    for width, height in ((1400, 900), (375, 812)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(base + reverse("inventory-node", args=[node.pk]))
        table = page.get_by_test_id("device-taints")
        expect(table).to_contain_text("gpu.nvidia.com/xid=79:NoSchedule")
        expect(table).to_contain_text("tainted by gpu.nvidia.com/xid=79:NoSchedule")
        expect(table).to_contain_text("example.com/odd=1:Evict")
        expect(table).to_contain_text("DeviceTaintRule odd")
        expect(page.get_by_test_id("taint-issues")).to_contain_text("dra.taint.unknown_effect")
        _fits(page)
        shot(page, f"node-{width}")
        page.goto(base + reverse("inventory-pool", args=[node.pool_id]))
        expect(page.get_by_test_id("unavailable")).to_contain_text(
            "1 GPU tainted by gpu.nvidia.com/xid=79:NoSchedule"
        )
        _fits(page)
        shot(page, f"pool-{width}")
        page.goto(base + "/")
        expect(page.get_by_test_id("unavailable")).to_contain_text("not free: 1 GPU tainted by")
        shot(page, f"overview-{width}")
