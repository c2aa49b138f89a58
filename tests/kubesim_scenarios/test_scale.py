"""The largest build reaches the fleet the performance targets name, and controllers keep invariants."""

from __future__ import annotations

from collections import Counter, defaultdict

from kubesim.controllers import start_controllers
from kubesim.scenarios import build
from kubesim.scenarios.scheduling_rules import node_allocatable, pod_requests
from kubesim.store import Store
from tests.kubesim_scenarios.controller_helpers import FakeClock


def test_the_5000_node_mixed_build_reaches_40000_gpus_150000_pods_and_100000_claims() -> None:
    scenario = build("mixed", nodes=5000, seed=1)

    kinds = Counter(o["kind"] for o in scenario.objects)

    assert kinds["Node"] == 5000
    assert kinds["Pod"] == 150_000 == scenario.truth.total_pods
    assert kinds["ResourceClaim"] == 100_000 == scenario.truth.total_claims
    assert scenario.truth.total_gpus == 40_000
    assert len({p for _, p in scenario.truth.dra_pools}) == sum(
        1 for n in scenario.truth.nodes.values() if n.mechanism == "dra"
    )


def test_all_controllers_on_a_whole_scenario_never_overcommit_a_node_or_a_device() -> None:
    scenario = build("mixed", nodes=40, seed=21)
    store = Store(clock=FakeClock())
    store.bulk_load(scenario.objects)
    clock = FakeClock()
    controllers = start_controllers(store, background=False, clock=clock)

    for _ in range(3):
        assert controllers.settle(60)
        clock.advance(4000)  # let run-seconds pods finish, so the scheduler refills the room they leave

    used: dict[str, Counter[str]] = defaultdict(Counter)
    for pod in store.list("pods"):
        node = pod["spec"].get("nodeName")
        if node and pod["status"]["phase"] not in ("Succeeded", "Failed"):
            used[node].update(pod_requests(pod["spec"]))
    for node in store.list("nodes"):
        allocatable = node_allocatable(node)
        for resource, amount in used[node["metadata"]["name"]].items():
            if resource.startswith("nvidia.com/") and resource not in (
                "nvidia.com/gpumem",
                "nvidia.com/gpucores",
            ):
                assert amount <= allocatable.get(resource, 0), (node["metadata"]["name"], resource)
    devices = Counter(
        (r["pool"], r["device"])
        for claim in store.list("resourceclaims")
        for r in ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", [])
    )
    assert devices and max(devices.values()) == 1
