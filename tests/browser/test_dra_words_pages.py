"""Issue 30 in Chromium at 1400 and 375 px: the oversubscription page says which cards are not offered
under the flavor, the node page says a claim waits for its binding condition on the claim's row, and a
rollout the platform stopped on a driver-managed MIG pool says why. Each page fits its window."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import Page, expect

from inventory.models import Allocation, Node, NodePool, ResourceClaim
from policies.models import Rollout, RolloutState
from quotas.models import Flavor, Quota
from tests.inventory import factories as inv
from tests.policies_agents.factories import bundle, revision

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

H100 = "NVIDIA-H100-80GB-HBM3"
GPU = "nvidia.com/gpu"
DRIVER = "gpu.nvidia.com"
WORDS = "2 of 16 H100-80GB not offered: 1 GPU cordoned by HAMi (hami.io/device-cordon), 1 GPU tainted by"
WAITING = "waiting to bind: the device is not ready until dra.example.com/fabric-attached is True"
STOPPED = (
    "Stopped: the NVIDIA DRA driver manages MIG on NVIDIA-H100-80GB-HBM3's nodes (h100-0, h100-1) with "
    "DynamicMIG, creating MIG partitions per claim, and mig-parted must not run beside it; r1 would push "
    "label nvidia.com/mig.config=all-balanced, file mig-parted/config.yaml. Declare mode dra and publish "
    "a new revision. 0 node(s) keep r1, 1 stay on what they ran."
)


def _fits(page: Page) -> None:
    scroll, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert scroll <= inner


def _fleet(cast) -> tuple[NodePool, Node, Rollout]:
    """Two nodes of 8 H100s: gpu 3 of h100-0 tainted, gpu 5 of h100-1 cordoned; flavor h100 with a
    quota of 20. h100-0's GPUs are DRA devices, one held by a claim waiting for its binding
    condition. A MIG rollout on the pool the platform stopped."""
    pool = inv.h100_cards(
        nodes=2, blocked={(0, 3): inv.XID_TAINT, (1, 5): inv.HAMI_CORDON}, dra_driver=DRIVER, dra_nodes=1
    )
    nodes = list(Node.objects.filter(pool=pool).order_by("name"))
    flavor = Flavor.objects.create(
        name="h100", pool=pool, gpu_model=H100, resources=[{"name": GPU, "ge_per_unit": "1"}]
    )
    Quota.objects.create(tenant=cast.vision, flavor=flavor, resource=GPU, nominal=20)
    claim = ResourceClaim.objects.create(
        cluster=pool.cluster,
        namespace="team-vision",
        name="trainer-gpu",
        uid="claim-1",
        state="allocated",
        results=[
            {"request": "gpu", "driver": DRIVER, "pool": "h100-0", "device": "gpu-0", "binding": WAITING}
        ],
    )
    Allocation.objects.create(
        cluster=pool.cluster,
        tenant=cast.vision,
        node=nodes[0],
        pool=pool,
        namespace="team-vision",
        holder_kind="claim",
        holder_name="trainer-gpu",
        holder_uid="claim-1",
        unit_key=f"dra/{DRIVER}/h100-0/gpu-0",
        resource_name=DRIVER,
        model_key="H100-80GB",
        ge=Decimal(1),
        started_at=timezone.now(),
        claim=claim,
    )
    target = revision(pool, bundle("all-balanced"))
    rollout = Rollout.objects.create(
        pool=pool,
        revision=target,
        state=RolloutState.CANCELLED,
        waves_started=1,
        message=STOPPED,
        finished_at=timezone.now(),
    )
    return pool, nodes[0], rollout


def test_not_offered_on_oversubscription_binding_on_the_node_and_a_stopped_rollout(
    page: Page, login, cast, shot
):
    _, node, rollout = _fleet(cast)
    base = login(page, "pat")
    for width, height in ((1400, 900), (375, 812)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(base + reverse("queues-oversubscription"))
        note = page.get_by_test_id("not-offered")
        expect(note).to_contain_text(WORDS)
        expect(note).to_be_in_viewport()
        _fits(page)
        # at phone width each flavor is a card of labelled figures, nothing to scroll sideways
        box = page.locator(".table-scroll")
        assert box.evaluate("e => e.scrollWidth <= e.clientWidth"), (
            f"the table scrolls sideways at {width} px"
        )
        if width == 375:
            expect(page.get_by_text("GE ÷ cards").first).to_be_visible()
        shot(page, f"oversubscription-{width}")
        page.goto(base + reverse("inventory-node", args=[node.pk]))
        binding = page.get_by_test_id("binding")
        expect(binding).to_contain_text(WAITING)
        expect(binding).to_be_visible()  # not folded away under "Who holds what"
        _fits(page)
        shot(page, f"node-{width}")
        page.goto(base + reverse("policy-rollout", args=[rollout.pk]))
        expect(page.get_by_test_id("rollout-message")).to_contain_text("mig-parted must not run beside it")
        expect(page.get_by_test_id("rollout-state")).to_contain_text("aborted")
        _fits(page)
        shot(page, f"rollout-stopped-{width}")
