"""Claims get devices that match their class and selectors, once each, within shared counters."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import pytest

from kubesim.controllers.cel_env import SelectorEvaluator, device_activation
from tests.kubesim_scenarios.controller_helpers import Cluster, claim, cluster, gpu_pod, scheduled_condition

HUGE_MEMORY = "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('1Ti')) >= 0"
BIG_MEMORY = "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('100Gi')) >= 0"


def profile(name: str) -> str:
    return f"device.attributes['gpu.nvidia.com'].profile == '{name}'"


def use(c: Cluster, name: str, claim_obj: dict[str, Any]) -> None:
    c.store.create("resourceclaims", claim_obj)
    c.store.create(
        "pods",
        gpu_pod(name, {}, claims=[{"name": "gpu", "resourceClaimName": claim_obj["metadata"]["name"]}]),
    )


def devices_by_id(c: Cluster) -> dict[tuple[str, str], dict[str, Any]]:
    found = {}
    for rs in c.store.list("resourceslices"):
        for device in rs["spec"].get("devices") or []:
            found[(rs["spec"]["pool"]["name"], device["name"])] = device
    return found


def results(c: Cluster) -> list[tuple[str, dict[str, str]]]:
    return [
        (cl["metadata"]["name"], r)
        for cl in c.store.list("resourceclaims")
        for r in ((cl.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", [])
    ]


@pytest.fixture
def dra_cluster() -> Cluster:
    # one node per DRA pool: H100 whole GPUs, A100 80GB with 7x 1g.10gb per GPU, H200 partitionable
    return cluster("dra", 3, enabled={"scheduler", "dra-allocator", "pod-lifecycle"})


def test_a_capacity_selector_only_matches_devices_with_enough_memory(dra_cluster: Cluster) -> None:
    c = dra_cluster
    for i in range(3):
        use(c, f"big-{i}", claim(f"big-{i}", "gpu.nvidia.com", selector=BIG_MEMORY))

    c.settle()

    devices = devices_by_id(c)
    allocated = results(c)
    assert len(allocated) == 3
    for _, result in allocated:
        device = devices[(result["pool"], result["device"])]
        assert device["capacity"]["memory"]["value"] == "141Gi"
        assert device["attributes"]["type"]["string"] == "gpu"
    pod = c.pod("team-vision", "big-0")
    assert pod["status"]["phase"] == "Running"
    status = c.store.get("resourceclaims", "team-vision", "big-0")["status"]
    assert status["reservedFor"] == [{"resource": "pods", "name": "big-0", "uid": pod["metadata"]["uid"]}]
    assert status["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [
        pod["spec"]["nodeName"]
    ]
    assert (
        "resource.kubernetes.io/delete-protection"
        in c.store.get("resourceclaims", "team-vision", "big-0")["metadata"]["finalizers"]
    )


def test_mig_claims_get_distinct_devices_of_their_profile_and_the_rest_wait(dra_cluster: Cluster) -> None:
    c = dra_cluster
    for i in range(60):
        use(c, f"small-{i:02d}", claim(f"small-{i:02d}", "mig.nvidia.com", selector=profile("1g.10gb")))

    c.settle()

    allocated = results(c)
    taken = Counter((r["pool"], r["device"]) for _, r in allocated)
    assert len(allocated) == 56 and max(taken.values()) == 1
    devices = devices_by_id(c)
    assert {devices[key]["attributes"]["profile"]["string"] for key in taken} == {"1g.10gb"}
    waiting = [p for p in c.store.list("pods", namespace="team-vision") if not p["spec"].get("nodeName")]
    assert len(waiting) == 4
    assert "cannot allocate all claims" in scheduled_condition(waiting[0])["message"]


def test_partitionable_gpus_never_give_out_more_than_their_counters(dra_cluster: Cluster) -> None:
    c = dra_cluster
    # Each H200 holds either its full device or its 7g.141gb instance: they consume the same counters.
    for i in range(8):
        use(c, f"full-{i}", claim(f"full-{i}", "gpu.nvidia.com", selector=BIG_MEMORY))
        use(c, f"whole-mig-{i}", claim(f"whole-mig-{i}", "mig.nvidia.com", selector=profile("7g.141gb")))
    for i in range(10):
        use(c, f"tiny-{i}", claim(f"tiny-{i}", "mig.nvidia.com", selector=profile("1g.18gb")))

    c.settle()

    counter_sets = {}
    consumes = {}
    for rs in c.store.list("resourceslices"):
        pool = rs["spec"]["pool"]["name"]
        for counter_set in rs["spec"].get("sharedCounters") or []:
            counter_sets[(pool, counter_set["name"])] = counter_set["counters"]
        for device in rs["spec"].get("devices") or []:
            consumes[(pool, device["name"])] = device.get("consumesCounters") or []
    used: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    allocated = results(c)
    for _, result in allocated:
        for consumed in consumes[(result["pool"], result["device"])]:
            for name, value in consumed["counters"].items():
                used[(result["pool"], consumed["counterSet"])][name] += int(value["value"].removesuffix("Mi"))
    for key, counters in used.items():
        for name, amount in counters.items():
            assert amount <= int(counter_sets[key][name]["value"].removesuffix("Mi")), (key, name)
    assert len({(r["pool"], r["device"]) for _, r in allocated}) == len(allocated)
    assert 8 <= len(allocated) < 26  # 8 GPUs' worth of counters; not every claim can have one


def test_a_pod_template_gets_its_own_generated_claim(dra_cluster: Cluster) -> None:
    c = dra_cluster
    c.store.create(
        "resourceclaimtemplates",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "single-gpu", "namespace": "team-vision"},
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
        "pods", gpu_pod("templated", {}, claims=[{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}])
    )

    c.settle()

    pod = c.pod("team-vision", "templated")
    generated = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    generated_claim = c.store.get("resourceclaims", "team-vision", generated)
    assert generated.startswith("templated-gpu-")
    assert generated_claim["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"] == "gpu"
    assert generated_claim["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
    assert generated_claim["status"]["reservedFor"][0]["name"] == "templated"
    assert pod["status"]["phase"] == "Running"


def test_match_attribute_keeps_all_mig_devices_on_one_parent_gpu(dra_cluster: Cluster) -> None:
    c = dra_cluster
    requests = [
        {
            "name": f"p{i}",
            "exactly": {
                "deviceClassName": "mig.nvidia.com",
                "selectors": [{"cel": {"expression": profile(p)}}],
            },
        }
        for i, p in enumerate(("3g.71gb", "2g.35gb", "1g.18gb"))
    ]
    c.store.create(
        "resourceclaims",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "aligned", "namespace": "team-vision"},
            "spec": {
                "devices": {
                    "requests": requests,
                    "constraints": [{"requests": [], "matchAttribute": "gpu.nvidia.com/parentUUID"}],
                }
            },
        },
    )
    c.store.create("pods", gpu_pod("aligned", {}, claims=[{"name": "gpu", "resourceClaimName": "aligned"}]))

    c.settle()

    devices = devices_by_id(c)
    allocated = [r for name, r in results(c) if name == "aligned"]
    assert [r["request"] for r in allocated] == ["p0", "p1", "p2"]
    parents = {devices[(r["pool"], r["device"])]["attributes"]["parentUUID"]["string"] for r in allocated}
    assert len(parents) == 1


def test_first_available_falls_back_to_the_second_choice(dra_cluster: Cluster) -> None:
    c = dra_cluster
    c.store.create(
        "resourceclaims",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "either", "namespace": "team-vision"},
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "firstAvailable": [
                                {
                                    "name": "huge",
                                    "deviceClassName": "gpu.nvidia.com",
                                    "selectors": [{"cel": {"expression": HUGE_MEMORY}}],
                                },
                                {
                                    "name": "mig",
                                    "deviceClassName": "mig.nvidia.com",
                                    "selectors": [{"cel": {"expression": profile("1g.10gb")}}],
                                },
                            ],
                        }
                    ]
                }
            },
        },
    )
    c.store.create("pods", gpu_pod("either", {}, claims=[{"name": "gpu", "resourceClaimName": "either"}]))

    c.settle()

    assert [r["request"] for name, r in results(c) if name == "either"] == ["gpu/mig"]


def test_selector_errors_are_mismatches_not_crashes() -> None:
    evaluator = SelectorEvaluator()
    device = {
        "name": "gpu-0",
        "attributes": {"type": {"string": "gpu"}},
        "capacity": {"memory": {"value": "80Gi"}},
    }

    matched, error = evaluator.matches(profile("1g.10gb"), device_activation("gpu.nvidia.com", device))

    assert matched is False
    assert error is not None and "CEL runtime error" in error


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("device.driver == 'gpu.nvidia.com'", True),
        ("device.capacity['gpu.nvidia.com'].memory == quantity('81920Mi')", True),
        ("device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('40Gi'))", True),
        ("device.capacity['gpu.nvidia.com'].memory.isLessThan(quantity('40Gi'))", False),
        ("device.attributes['gpu.nvidia.com'].driverVersion.compareTo(semver('550.54.15')) > 0", True),
        ("device.attributes['gpu.nvidia.com'].driverVersion.isLessThan(semver('600.0.0'))", True),
        ("device.attributes['gpu.nvidia.com'].cudaComputeCapability.major() == 9", True),
        ("device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0000:00'", True),
        ("device.attributes['gpu.nvidia.com'].index == 0", True),
    ],
)
def test_kubernetes_cel_extensions_evaluate_like_the_api_server(expression: str, expected: bool) -> None:
    device = {
        "name": "gpu-0",
        "attributes": {
            "type": {"string": "gpu"},
            "index": {"int": 0},
            "driverVersion": {"version": "580.95.5"},
            "cudaComputeCapability": {"version": "9.0.0"},
            "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"},
        },
        "capacity": {"memory": {"value": "80Gi"}},
    }

    assert SelectorEvaluator().matches(expression, device_activation("gpu.nvidia.com", device)) == (
        expected,
        None,
    )


def test_tainted_devices_are_left_to_claims_that_tolerate_them(dra_cluster: Cluster) -> None:
    """KEP-5055 as the 1.37 scheduler applies it: a NoSchedule/NoExecute device taint, from the slice
    or from a DeviceTaintRule, keeps a device out of claims that do not tolerate it."""
    c = dra_cluster
    slice_obj = next(
        rs
        for rs in c.store.list("resourceslices")
        if any(
            d["name"] == "gpu-0" and "141Gi" in str(d.get("capacity"))
            for d in rs["spec"].get("devices") or []
        )
    )
    pool = slice_obj["spec"]["pool"]["name"]
    for device in slice_obj["spec"]["devices"]:
        if device["name"] == "gpu-0":
            device["taints"] = [{"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}]
    c.store.update("resourceslices", slice_obj)
    c.store.create(
        "devicetaintrules",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceTaintRule",
            "metadata": {"name": "rma"},
            "spec": {
                "deviceSelector": {"driver": "gpu.nvidia.com", "pool": pool, "device": "gpu-1"},
                "taint": {"key": "example.com/rma", "effect": "NoExecute"},
            },
        },
    )
    whole = sum(
        1
        for (p, _), d in devices_by_id(c).items()
        if p == pool and d["attributes"]["type"]["string"] == "gpu"
    )
    for i in range(whole):
        use(c, f"big-{i}", claim(f"big-{i}", "gpu.nvidia.com", selector=BIG_MEMORY))
    c.settle()
    taken = {r["device"] for _, r in results(c)}
    assert len(taken) == whole - 2 and not taken & {"gpu-0", "gpu-1"}

    tolerant = claim("tolerant", "gpu.nvidia.com", selector=BIG_MEMORY)
    tolerant["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] = [
        {"key": "gpu.nvidia.com/xid", "operator": "Exists", "effect": "NoSchedule"}
    ]
    use(c, "tolerant", tolerant)
    c.settle()
    assert {r["device"] for name, r in results(c) if name == "tolerant"} == {"gpu-0"}
