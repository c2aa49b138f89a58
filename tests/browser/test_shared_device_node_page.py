"""A GPU its DRA driver shares between claims (KEP-5075) on the node page: each share drawn as wide as
the part of the card it holds, the rest free, and a device that binds to the node says so (KEP-5007);
the page fits a 1400 px window and a 375 px phone."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import Page, expect

from inventory.models import Allocation, Gpu, ShareableUnit
from tests.inventory import factories as inv

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_shares_and_binds_to_node_on_the_node_page(page: Page, login, cast, shot):
    node = inv.node("gpu-shares-1")
    node.gpu_count = 1
    node.save()
    Gpu.objects.create(node=node, index=0, product=node.product, model_key="H100-80GB")
    unit = ShareableUnit.objects.create(
        cluster=node.cluster,
        node=node,
        key="dra/gpu.nvidia.com/gpu-shares-1/gpu-0@s",
        kind="dra_device",
        resource_name="gpu.nvidia.com",
        ge_each=Decimal(1),
        model_key="H100-80GB",
        driver="gpu.nvidia.com",
        pool_name="gpu-shares-1",
        device_name="gpu-0",
        device_uuid="GPU-0000",
        attributes={"type": "gpu", "uuid": "GPU-0000", "index": 0},
        shared_capacity={"memory": {"value": str(80 * 2**30)}},
        binds_to_node=True,
    )
    for name, ge in (("notebook-a", Decimal("0.25")), ("notebook-b", Decimal("0.5"))):
        Allocation.objects.create(
            cluster=node.cluster,
            tenant=cast.vision,
            namespace="team-vision",
            holder_kind="ResourceClaim",
            holder_name=name,
            holder_uid=f"uid-{name}",
            unit=unit,
            unit_key="dra/gpu.nvidia.com/gpu-shares-1/gpu-0",
            resource_name="gpu.nvidia.com",
            count=1,
            ge=ge,
            model_key="H100-80GB",
            node=node,
            node_name=node.name,
            pool=node.pool,
            started_at=timezone.now() - timedelta(hours=1),
        )
    base = login(page, "pat")
    for width, height in ((1400, 900), (375, 812)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(base + reverse("inventory-node", args=[node.pk]))
        card = page.get_by_test_id("gpu-card")
        card.get_by_text("Who holds what").click()
        holders = page.get_by_test_id("holders")
        expect(holders).to_contain_text("share: team-vision/notebook-a")
        expect(holders).to_contain_text("share: team-vision/notebook-b")
        expect(holders).to_contain_text("free: 20Gi of 80Gi memory")  # 80Gi less 1/4 and 1/2 of it
        expect(card.get_by_test_id("binds-to-node")).to_have_text("gpu-0: binds to this node when allocated")
        scroll, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert scroll <= inner
        shot(page, f"node-{width}")
