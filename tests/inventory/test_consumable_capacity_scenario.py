"""kubesim's "consumable-capacity" scenario synced: H100s the NVIDIA DRA driver shares between claims
(KEP-5075, ConsumableShares), one node in the driver's "memory" mode (80Gi, 1Mi..80Gi in 1Mi steps,
default the whole card), one with 4 shares (memory default 0, one share of 4 by default). kubesim's
allocator gives out the shares as the 1.37 scheduler does; the sync holds each share at the part of the
card it consumes, free capacity shrinks and grows back with the shares, a request outside the policy
stays unallocated, and the cards count stays the cards (shares add none)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from inventory.capacity import pool_model_capacity, pool_resource_free
from inventory.models import Allocation, Gpu, Node, NodePool, ParseIssueCount, ResourceClaim
from inventory.sync.runner import ClusterSync
from kubesim.controllers import start_controllers
from kubesim.scenarios import build
from tests.kubesim_scenarios.controller_helpers import MEMORY_POOL, SHARES_POOL, claim, use_share

pytestmark = pytest.mark.django_db


def _h100(cluster):
    pools = [p.pk for p in NodePool.objects.filter(cluster=cluster)]
    rows = [
        r for per in pool_model_capacity(pool_ids=pools).values() for r in per if r.model_key == "H100-80GB"
    ]
    free_units = sum(per.get("gpu.nvidia.com", 0) for per in pool_resource_free(pool_ids=pools).values())
    return (
        sum(r.cards for r in rows),
        sum(r.allocated_ge for r in rows),
        sum(r.free_ge for r in rows),
        free_units,
    )


def _held(cluster) -> dict[str, tuple[str, Decimal]]:
    return {
        a.holder_name: (a.unit_key, a.ge)
        for a in Allocation.objects.filter(
            cluster=cluster, ended_at__isnull=True, holder_kind="ResourceClaim"
        )
    }


def test_shares_hold_what_they_consume_and_free_capacity_follows_them(kubesim_factory, register):
    # two nodes of two H100s each, no workloads of the generator's: only the claims below
    built = build("consumable-capacity", nodes=2, seed=4, pods_per_node=0, claims_per_node=0, gpus_per_node=2)
    sim = kubesim_factory()
    sim.store.bulk_load(built.objects)
    memory_node, shares_node = (f"gpu-{pool}-0000" for pool in (MEMORY_POOL, SHARES_POOL))
    cluster = register(sim)
    controllers = start_controllers(
        sim.store, enabled={"scheduler", "dra-allocator", "pod-lifecycle"}, seed=4, background=False
    )
    try:
        ClusterSync(cluster, page_size=50).full_sync()
        assert _h100(cluster) == (4, 0, 4, 4)

        use_share(sim.store, MEMORY_POOL, "a-notebook", "20Gi")
        use_share(sim.store, MEMORY_POOL, "b-notebook", "20Gi")
        use_share(
            sim.store, MEMORY_POOL, "c-whole"
        )  # no amount: the default, 80Gi: only the second card has it
        use_share(sim.store, MEMORY_POOL, "d-too-big", "90Gi")  # above the policy's max: never allocated
        for i in range(3):
            use_share(sim.store, SHARES_POOL, f"s-{i}")  # one share of 4 each
        use_share(sim.store, SHARES_POOL, "s-3", "60Gi")  # 60Gi and the fourth share
        assert controllers.settle(30)
        ClusterSync(cluster, page_size=50).full_sync()

        def unit(node: str, device: str) -> str:
            return f"dra/gpu.nvidia.com/{node}/{device}"

        quarter = Decimal("0.25")
        assert _held(cluster) == {
            "a-notebook": (unit(memory_node, "gpu-0"), quarter),  # 20Gi of 80Gi
            "b-notebook": (unit(memory_node, "gpu-0"), quarter),
            "c-whole": (unit(memory_node, "gpu-1"), Decimal(1)),  # 80Gi of 80Gi
            "s-0": (unit(shares_node, "gpu-0"), quarter),  # max(0 of 80Gi, 1 of 4 shares)
            "s-1": (unit(shares_node, "gpu-0"), quarter),
            "s-2": (unit(shares_node, "gpu-0"), quarter),
            "s-3": (unit(shares_node, "gpu-0"), Decimal("0.75")),  # max(60Gi of 80Gi, 1 of 4)
        }
        too_big = ResourceClaim.objects.get(cluster=cluster, name="d-too-big")
        assert too_big.results == [] and not Allocation.objects.filter(holder_name="d-too-big").exists()
        # held: the memory node 1/4 + 1/4 + 1 = 1.5; the shares node's card 3 x 1/4 + 3/4 = 1.5 by its
        # shares, but one card holds at most one GE: 1. Cards 4, free 4 - 2.5 = 1.5. Free whole devices:
        # the shares node's second card only (a card with shares is not a free device).
        assert _h100(cluster) == (4, Decimal("2.5"), Decimal("1.5"), 1)
        assert Gpu.objects.filter(node__cluster=cluster).count() == 4  # shares add no cards

        # a-notebook's pod ends and its claim goes: its 20Gi share is free again
        sim.store.delete("pods", "team-vision", "a-notebook")
        obj = sim.store.get("resourceclaims", "team-vision", "a-notebook")
        obj["metadata"]["finalizers"] = []
        sim.store.update("resourceclaims", obj)
        sim.store.delete("resourceclaims", "team-vision", "a-notebook")
        assert controllers.settle(30)
        ClusterSync(cluster, page_size=50).full_sync()

        assert "a-notebook" not in _held(cluster)
        assert _h100(cluster) == (4, Decimal("2.25"), Decimal("1.75"), 1)
        assert ResourceClaim.objects.get(cluster=cluster, name="d-too-big").results == []
    finally:
        controllers.stop()


def test_the_node_page_draws_each_share_and_says_which_devices_bind_to_the_node(
    kubesim_factory, register, cast
):
    built = build("consumable-capacity", nodes=2, seed=4, pods_per_node=0, claims_per_node=0, gpus_per_node=2)
    memory_node = f"gpu-{MEMORY_POOL}-0000"
    for obj in built.objects:
        if obj["kind"] == "ResourceSlice" and obj["spec"].get("nodeName") == memory_node:
            obj["spec"]["devices"][1]["bindsToNode"] = True  # gpu-1 (KEP-5007)
    sim = kubesim_factory()
    sim.store.bulk_load(built.objects)
    cluster = register(sim)
    controllers = start_controllers(
        sim.store, enabled={"scheduler", "dra-allocator", "pod-lifecycle"}, seed=4, background=False
    )
    try:
        use_share(sim.store, MEMORY_POOL, "a-notebook", "20Gi")
        use_share(sim.store, MEMORY_POOL, "b-notebook", "60Gi")
        assert controllers.settle(30)
    finally:
        controllers.stop()
    ClusterSync(cluster, page_size=50).full_sync()

    node = Node.objects.get(cluster=cluster, name=memory_node)
    assert list(node.units.order_by("device_name").values_list("device_name", "binds_to_node")) == [
        ("gpu-0", False),
        ("gpu-1", True),
    ]
    browser = Client()
    browser.force_login(cast.pat)
    text = browser.get(reverse("inventory-node", args=[node.pk])).content.decode()
    # GPU 0 holds two shares (20Gi and 60Gi of 80Gi: 1/4 and 3/4), nothing of it free
    assert "share: team-vision/a-notebook (vision)" in text
    assert "share: team-vision/b-notebook (vision)" in text
    assert "<small>gpu-1: binds to this node when allocated</small>" in text
    assert "gpu-0: binds" not in text
    # GPU 1 holds no share: all of its 80Gi is free, said in its capacity's words
    assert "free: 80Gi of 80Gi memory" in text and "free: free" not in text


REQUEST_OUTSIDE_POLICY = "dra.capacity.request_outside_policy"
# 90Gi is above both pools' validRange.max (80Gi): the memory pool takes 1Mi..80Gi in 1Mi steps, the
# shares pool's memory 0..80Gi in 1Mi steps; no card of the DeviceClass could ever give it.
TOO_BIG = (
    "requests 90Gi of memory; gpu.nvidia.com's devices take 0 to 80Gi in steps of 1Mi, "
    "or 1Mi to 80Gi in steps of 1Mi"
)


def _outside_policy_count(cluster) -> int:
    return ParseIssueCount.objects.get(
        cluster=cluster, kind="resourceclaims", code=REQUEST_OUTSIDE_POLICY
    ).count


def test_a_pending_claim_asking_more_than_any_card_takes_is_flagged_once_and_cleared_when_allocated(
    kubesim_factory, register, cast
):
    built = build("consumable-capacity", nodes=2, seed=4, pods_per_node=0, claims_per_node=0, gpus_per_node=2)
    sim = kubesim_factory()
    sim.store.bulk_load(built.objects)
    cluster = register(sim)
    controllers = start_controllers(
        sim.store, enabled={"scheduler", "dra-allocator", "pod-lifecycle"}, seed=4, background=False
    )
    try:
        use_share(sim.store, MEMORY_POOL, "a-notebook", "20Gi")
        use_share(sim.store, MEMORY_POOL, "d-too-big", "90Gi")
        assert controllers.settle(30)
        ClusterSync(cluster, page_size=50).full_sync()

        too_big = ResourceClaim.objects.get(cluster=cluster, name="d-too-big")
        assert (too_big.state, too_big.issues) == (
            "pending",
            [
                {
                    "severity": "warning",
                    "code": REQUEST_OUTSIDE_POLICY,
                    "message": TOO_BIG,
                    "source": "team-vision/d-too-big request gpu",
                }
            ],
        )
        assert ResourceClaim.objects.get(cluster=cluster, name="a-notebook").issues == []
        counted = ParseIssueCount.objects.get(
            cluster=cluster, kind="resourceclaims", code=REQUEST_OUTSIDE_POLICY
        )
        assert (counted.count, counted.last_object, counted.last_message) == (
            1,
            "team-vision/d-too-big",
            TOO_BIG,
        )
        # on the page where the sync's claim issues are shown (the clusters page's parse issues)
        browser = Client()
        browser.force_login(cast.pat)
        page = browser.get(reverse("inventory")).content.decode()
        assert f"<code>{REQUEST_OUTSIDE_POLICY}</code>" in page and escape(TOO_BIG) in page

        # a resync finds it again and counts nothing, nor changes the claim
        report = ClusterSync(cluster, page_size=50).full_sync()
        assert report.changes["resourceclaims"] == 0
        assert _outside_policy_count(cluster) == 1
        assert ResourceClaim.objects.get(cluster=cluster, name="d-too-big").issues == too_big.issues

        # the memory node's cards are swapped for 141Gi ones: the driver republishes its slice, the
        # scheduler gives d-too-big 90Gi of a card (rounded to the 1Mi step: 90Gi), and the issue clears
        memory_node = f"gpu-{MEMORY_POOL}-0000"
        (piece,) = [s for s in sim.store.list("resourceslices") if s["spec"].get("nodeName") == memory_node]
        for device in piece["spec"]["devices"]:
            device["capacity"]["memory"] = {
                "value": "141Gi",
                "requestPolicy": {
                    "default": "141Gi",
                    "validRange": {"min": "1Mi", "max": "141Gi", "step": "1Mi"},
                },
            }
        sim.store.update("resourceslices", piece)
        assert controllers.settle(30)
        ClusterSync(cluster, page_size=50).full_sync()

        allocated = ResourceClaim.objects.get(cluster=cluster, name="d-too-big")
        assert allocated.state.startswith("allocated") and allocated.issues == []
        assert _outside_policy_count(cluster) == 1  # history: the flag was met once
    finally:
        controllers.stop()


def test_a_flagged_claim_that_is_deleted_keeps_no_issue(kubesim_factory, register):
    built = build("consumable-capacity", nodes=2, seed=4, pods_per_node=0, claims_per_node=0, gpus_per_node=2)
    sim = kubesim_factory()
    sim.store.bulk_load(built.objects)
    cluster = register(sim)
    # a claim no pod uses: nothing allocates it, and 90Gi could not be anyway
    sim.store.create("resourceclaims", claim("d-too-big", "gpu.nvidia.com", memory="90Gi"))
    ClusterSync(cluster, page_size=50).full_sync()
    assert [i["message"] for i in ResourceClaim.objects.get(cluster=cluster, name="d-too-big").issues] == [
        TOO_BIG
    ]

    sim.store.delete("resourceclaims", "team-vision", "d-too-big")
    ClusterSync(cluster, page_size=50).full_sync()

    gone = ResourceClaim.objects.get(cluster=cluster, name="d-too-big")
    assert (gone.present, gone.issues) == (False, [])
    assert _outside_policy_count(cluster) == 1
