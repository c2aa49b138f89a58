"""Pods run, finish and go away; claims follow their pods; churn is random but replayable."""

from __future__ import annotations

import json
import time

import pytest

from kubesim.controllers import CONTROLLER_NAMES, start_controllers
from kubesim.scenarios import build
from kubesim.store import Store
from tests.kubesim_scenarios.controller_helpers import FakeClock, claim, cluster, gpu_pod

RUN_SECONDS = "kubesim.gpuplatform.io/run-seconds"


def test_a_pod_with_run_seconds_succeeds_after_that_long() -> None:
    c = cluster("exclusive", 1, enabled={"scheduler", "pod-lifecycle"})
    c.store.create("pods", gpu_pod("job", {"nvidia.com/gpu": "1"}, annotations={RUN_SECONDS: "60"}))
    c.settle()
    assert c.pod("team-vision", "job")["status"]["phase"] == "Running"

    c.clock.advance(59)
    c.settle()
    assert c.pod("team-vision", "job")["status"]["phase"] == "Running"

    c.clock.advance(2)
    c.settle()
    pod = c.pod("team-vision", "job")
    assert pod["status"]["phase"] == "Succeeded"
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"


def test_finished_pods_free_their_gpus_for_pending_ones() -> None:
    c = cluster("exclusive", 1, enabled={"scheduler", "pod-lifecycle"})
    c.store.create("pods", gpu_pod("first", {"nvidia.com/gpu": "8"}, annotations={RUN_SECONDS: "10"}))
    c.store.create("pods", gpu_pod("second", {"nvidia.com/gpu": "8"}))
    c.settle()
    assert not c.pod("team-vision", "second")["spec"].get("nodeName")

    c.clock.advance(11)
    c.settle()

    assert c.pod("team-vision", "second")["status"]["phase"] == "Running"


def test_terminating_pods_of_a_scenario_finish_and_disappear() -> None:
    scenario = build("exclusive", nodes=6, seed=8)
    deleting = [
        (p["metadata"]["namespace"], p["metadata"]["name"])
        for p in scenario.objects
        if p["kind"] == "Pod" and p["metadata"].get("deletionTimestamp")
    ]
    store = Store()
    store.bulk_load(scenario.objects)
    controllers = start_controllers(store, enabled={"pod-lifecycle"}, background=False, clock=FakeClock())

    assert controllers.settle(30)

    assert deleting
    assert all(store.get("pods", ns, name) is None for ns, name in deleting)


def test_claims_are_released_when_their_pods_end() -> None:
    c = cluster("dra", 3, enabled={"scheduler", "dra-allocator", "pod-lifecycle"})
    c.store.create("resourceclaims", claim("mine", "gpu.nvidia.com"))
    c.store.create(
        "pods",
        gpu_pod(
            "user", {}, claims=[{"name": "gpu", "resourceClaimName": "mine"}], annotations={RUN_SECONDS: "30"}
        ),
    )
    c.store.create(
        "resourceclaimtemplates",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one", "namespace": "team-vision"},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]
                    }
                }
            },
        },
    )
    c.store.create(
        "pods",
        gpu_pod(
            "templated",
            {},
            claims=[{"name": "gpu", "resourceClaimTemplateName": "one"}],
            annotations={RUN_SECONDS: "30"},
        ),
    )
    c.settle()
    generated = c.pod("team-vision", "templated")["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    assert c.store.get("resourceclaims", "team-vision", "mine")["status"]["reservedFor"]

    c.clock.advance(31)
    c.settle()

    mine = c.store.get("resourceclaims", "team-vision", "mine")
    assert "allocation" not in mine.get("status", {}) and "reservedFor" not in mine.get("status", {})
    assert c.store.get("resourceclaims", "team-vision", generated) is None


def test_a_deleted_claim_waits_for_its_pod_then_goes() -> None:
    c = cluster("dra", 3, enabled={"scheduler", "dra-allocator", "pod-lifecycle"})
    c.store.create("resourceclaims", claim("doomed", "gpu.nvidia.com"))
    c.store.create(
        "pods",
        gpu_pod(
            "holder",
            {},
            claims=[{"name": "gpu", "resourceClaimName": "doomed"}],
            annotations={RUN_SECONDS: "5"},
        ),
    )
    c.settle()

    c.store.delete("resourceclaims", "team-vision", "doomed")
    c.settle()
    assert c.store.get("resourceclaims", "team-vision", "doomed")["metadata"]["deletionTimestamp"]

    c.clock.advance(6)
    c.settle()
    assert c.store.get("resourceclaims", "team-vision", "doomed") is None


def churn_history(seed: int) -> str:
    scenario = build("mixed", nodes=14, seed=3)
    store = Store(clock=FakeClock())
    store.bulk_load(scenario.objects)
    clock = FakeClock()
    controllers = start_controllers(
        store, enabled=set(CONTROLLER_NAMES), seed=seed, clock=clock, churn_rate=20, background=False
    )
    for _ in range(8):
        clock.advance(0.5)
        controllers.run_once()
    controllers.stop()
    state = {
        resource: sorted(
            (
                o["metadata"].get("namespace", ""),
                o["metadata"]["name"],
                (o.get("status") or {}).get("phase"),
                (o.get("spec") or {}).get("nodeName"),
                (o.get("spec") or {}).get("unschedulable"),
            )
            for o in store.list(resource)
        )
        for resource in ("pods", "resourceclaims", "nodes")
    }
    return json.dumps(state, sort_keys=True)


def test_churn_changes_the_cluster_and_replays_exactly_from_its_seed() -> None:
    first = churn_history(5)

    assert first == churn_history(5)
    assert first != churn_history(6)
    assert "churn-" in first


def test_unknown_controller_names_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown controllers"):
        start_controllers(Store(), enabled={"schedular"}, background=False)


def test_the_background_thread_binds_pods_on_its_own() -> None:
    scenario = build("exclusive", nodes=1, seed=1, pods_per_node=0)
    store = Store()
    store.bulk_load(scenario.objects)
    controllers = start_controllers(store, tick=0.01)
    try:
        store.create("pods", gpu_pod("async", {"nvidia.com/gpu": "1"}))
        deadline = time.monotonic() + 10
        while (
            time.monotonic() < deadline
            and store.get("pods", "team-vision", "async")["status"]["phase"] != "Running"
        ):
            time.sleep(0.02)
    finally:
        controllers.stop()
    assert store.get("pods", "team-vision", "async")["status"]["phase"] == "Running"


def _unhealthy_after_long_churn(nodes: int) -> tuple[int, int]:
    store = Store(clock=FakeClock())
    store.bulk_load(build("mixed", nodes=nodes, seed=1).objects)
    clock = FakeClock()
    controllers = start_controllers(
        store, enabled=set(CONTROLLER_NAMES), seed=1, clock=clock, churn_rate=20, background=False
    )
    for _ in range(30):  # 600 churn actions: about 60 flaps and 60 cordons
        clock.advance(1.0)
        controllers.run_once()
    controllers.stop()
    listed = store.list("nodes")
    not_ready = sum(
        1
        for n in listed
        for c in (n.get("status") or {}).get("conditions") or []
        if c.get("type") == "Ready" and c.get("status") != "True"
    )
    cordoned = sum(1 for n in listed if (n.get("spec") or {}).get("unschedulable"))
    return not_ready, cordoned


def test_long_churn_leaves_a_realistic_few_nodes_unhealthy_not_most() -> None:
    # A flap or a cordon takes a node down only while few are; otherwise it brings one back.
    not_ready, cordoned = _unhealthy_after_long_churn(nodes=20)
    assert 0 < not_ready <= 2 and 0 < cordoned <= 2
