"""kubesim's allocator shares `allowMultipleAllocations` devices as the 1.37 kube-scheduler does (KEP-5075):
each claim consumes its request rounded up per the capacity's request policy (the default when it names
none), several claims share a card until its capacity is used up, and a request outside the policy is
not allocated. The pools are the "consumable-capacity" scenario's: one H100 in the NVIDIA driver's
"memory" mode (memory 80Gi, 1Mi..80Gi in 1Mi steps, default 80Gi), one with 4 shares (memory default 0,
shares 1..4, default 1)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from kubesim.scenarios import consumable
from tests.kubesim_scenarios.controller_helpers import (
    MEMORY_POOL,
    SHARES_POOL,
    Cluster,
    cluster,
    scheduled_condition,
    use_share,
)


def result_of(c: Cluster, name: str) -> dict[str, Any] | None:
    allocation = (c.store.get("resourceclaims", "team-vision", name).get("status") or {}).get("allocation")
    return allocation["devices"]["results"][0] if allocation else None


@pytest.fixture
def shares() -> Cluster:
    # one node per pool, one GPU each: every share lands on the same card
    return cluster(
        "consumable-capacity", 2, gpus_per_node=1, enabled={"scheduler", "dra-allocator", "pod-lifecycle"}
    )


def test_claims_share_a_card_in_memory_mode_until_its_memory_is_used_up(shares: Cluster) -> None:
    c = shares
    use_share(c.store, MEMORY_POOL, "a-notebook", "20Gi")
    use_share(c.store, MEMORY_POOL, "b-notebook", "20Gi")
    use_share(c.store, MEMORY_POOL, "c-odd", "1536Ki")  # rounded up to the next 1Mi step: 2Mi
    use_share(
        c.store, MEMORY_POOL, "d-whole", None
    )  # names no memory: the default, 80Gi, which no longer fits
    use_share(c.store, MEMORY_POOL, "e-too-big", "90Gi")  # above validRange.max: outside the policy
    use_share(c.store, MEMORY_POOL, "f-rest", "39Gi")  # 20 + 20 + 39 Gi + 2Mi <= 80Gi

    c.settle()

    held = {name: result_of(c, name) for name in ("a-notebook", "b-notebook", "c-odd", "f-rest")}
    assert {n: (r["device"], r["consumedCapacity"]) for n, r in held.items() if r} == {
        "a-notebook": ("gpu-0", {"memory": "20Gi"}),
        "b-notebook": ("gpu-0", {"memory": "20Gi"}),
        "c-odd": ("gpu-0", {"memory": "2Mi"}),
        "f-rest": ("gpu-0", {"memory": "39Gi"}),
    }
    assert len({r["shareID"] for r in held.values() if r}) == 4
    assert result_of(c, "d-whole") is None and result_of(c, "e-too-big") is None
    for name in ("d-whole", "e-too-big"):
        assert "cannot allocate all claims" in scheduled_condition(c.pod("team-vision", name))["message"]


def test_a_claim_naming_nothing_takes_one_of_four_shares_and_waits_for_a_freed_one(shares: Cluster) -> None:
    c = shares
    for i in range(5):
        use_share(c.store, SHARES_POOL, f"share-{i}")

    c.settle()

    results = {i: result_of(c, f"share-{i}") for i in range(5)}
    assert [results[i]["consumedCapacity"] for i in range(4)] == [{"memory": "0", "shares": "1"}] * 4
    assert results[4] is None

    # the first claim's pod ends and its claim is deleted: its share is free again
    c.store.delete("pods", "team-vision", "share-0")
    claim = c.store.get("resourceclaims", "team-vision", "share-0")
    claim["metadata"]["finalizers"] = []
    c.store.update("resourceclaims", claim)
    c.store.delete("resourceclaims", "team-vision", "share-0")
    c.settle()

    assert result_of(c, "share-4") == {
        "request": "gpu",
        "driver": "gpu.nvidia.com",
        "pool": c.nodes_of_pool(SHARES_POOL)[0],
        "device": "gpu-0",
        "shareID": consumable.share_id(
            c.store.get("resourceclaims", "team-vision", "share-4"),
            "gpu",
            ("gpu.nvidia.com", c.nodes_of_pool(SHARES_POOL)[0], "gpu-0"),
        ),
        "consumedCapacity": {"memory": "0", "shares": "1"},
    }


def _device(policy: dict[str, Any] | None, value: str = "80Gi") -> dict[str, Any]:
    entry: dict[str, Any] = {"value": value}
    if policy is not None:
        entry["requestPolicy"] = policy
    return {"name": "gpu-0", "allowMultipleAllocations": True, "capacity": {"memory": entry}}


GI = 2**30


@pytest.mark.parametrize(
    ("policy", "wanted", "consumed"),
    [
        # validValues: rounded up to the smallest valid value not below the request; above all: refused
        ({"default": "10Gi", "validValues": ["10Gi", "20Gi", "40Gi"]}, {"memory": "15Gi"}, 20 * GI),
        ({"default": "10Gi", "validValues": ["10Gi", "20Gi", "40Gi"]}, {"memory": "50Gi"}, None),
        ({"default": "10Gi", "validValues": ["10Gi", "20Gi", "40Gi"]}, {}, 10 * GI),
        # validRange: below min to min, up to the next step from min; above max: refused
        (
            {"default": "8Gi", "validRange": {"min": "4Gi", "max": "64Gi", "step": "4Gi"}},
            {"memory": "1"},
            4 * GI,
        ),
        (
            {"default": "8Gi", "validRange": {"min": "4Gi", "max": "64Gi", "step": "4Gi"}},
            {"memory": "9Gi"},
            12 * GI,
        ),
        (
            {"default": "8Gi", "validRange": {"min": "4Gi", "max": "64Gi", "step": "4Gi"}},
            {"memory": "65Gi"},
            None,
        ),
        # no policy: the request as it is, or the whole capacity when the request names none
        (None, {"memory": "5Gi"}, 5 * GI),
        (None, {}, 80 * GI),
        # a capacity the device does not declare: the device cannot serve the request
        (None, {"bandwidth": "1"}, None),
    ],
)
def test_consumption_follows_the_request_policy(
    policy: dict[str, Any] | None, wanted: dict[str, str], consumed: int | None
) -> None:
    got = consumable.consumption(_device(policy), wanted)

    assert (got["memory"] if got is not None else None) == (None if consumed is None else Fraction(consumed))
