"""The truth a scenario records matches its objects, counted here independently from the objects."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

import pytest
import yaml

from kubesim.scenarios import Scenario, build
from tests.kubesim_scenarios.helpers import realworld

GPU = "nvidia.com/gpu"
HAMI = ("nvidia.com/gpumem", "nvidia.com/gpucores")


@pytest.fixture(scope="module")
def mixed() -> Scenario:
    return build("mixed", nodes=40, seed=9)


@pytest.fixture(scope="module")
def dra_only() -> Scenario:
    return build("dra", nodes=12, seed=4)


def of_kind(scenario: Scenario, kind: str) -> list[dict[str, Any]]:
    return [o for o in scenario.objects if o["kind"] == kind]


def mig_parted_devices_per_gpu(config: str, product: str) -> int:
    """Instances per GPU that the upstream mig-parted default config creates (independent of kubesim)."""
    doc = yaml.safe_load(realworld("mig-parted-config-default.yaml").read_text())
    filters = {"NVIDIA-A100-SXM4-40GB": "0x20B010DE", "NVIDIA-H100-80GB-HBM3": "0x233010DE"}
    for entry in doc["mig-configs"][config]:
        wanted = entry.get("device-filter")
        if wanted is None or filters[product] in (wanted if isinstance(wanted, list) else [wanted]):
            return sum(entry["mig-devices"].values())
    raise AssertionError(f"{config} has no entry for {product}")


def physical_gpus(node: dict[str, Any]) -> tuple[str, int]:
    labels = node["metadata"]["labels"]
    product = labels["nvidia.com/gpu.product"].removesuffix("-SHARED")
    if "-MIG-" in product and labels["nvidia.com/mig.strategy"] == "single":
        base = product.split("-MIG-")[0]
        per_gpu = mig_parted_devices_per_gpu(labels["nvidia.com/mig.config"], base)
        return base, int(labels["nvidia.com/gpu.count"]) // per_gpu
    return product, int(labels["nvidia.com/gpu.count"])


def test_gpus_per_model_match_the_gfd_labels(mixed: Scenario) -> None:
    counted: Counter[str] = Counter()
    for node in of_kind(mixed, "Node"):
        product, gpus = physical_gpus(node)
        counted[product] += gpus

    assert counted == mixed.truth.gpus_by_model
    assert mixed.truth.total_gpus == 40 * 8


def test_mig_instances_match_mixed_labels_and_single_capacity(mixed: Scenario) -> None:
    counted: Counter[tuple[str, str]] = Counter()
    for node in of_kind(mixed, "Node"):
        labels = node["metadata"]["labels"]
        if labels.get("nvidia.com/gpu.deploy.device-plugin") != "true":
            continue  # DRA nodes: their MIG devices are counted as DRA devices
        for key, value in labels.items():
            if key.startswith("nvidia.com/mig-") and key.endswith(".count"):
                profile = key[len("nvidia.com/mig-") : -len(".count")]
                counted[(labels["nvidia.com/gpu.product"], profile)] += int(value)
                assert node["status"]["allocatable"][f"nvidia.com/mig-{profile}"] == value
        product = labels["nvidia.com/gpu.product"]
        if "-MIG-" in product:
            base, profile = product.split("-MIG-")
            counted[(base, profile)] += int(node["status"]["capacity"][GPU])

    assert counted == mixed.truth.mig_instances
    assert counted


def test_time_slicing_and_mps_multiply_the_gpu_count_by_replicas(mixed: Scenario) -> None:
    counted: Counter[tuple[str, str]] = Counter()
    for node in of_kind(mixed, "Node"):
        labels = node["metadata"]["labels"]
        strategy = labels.get("nvidia.com/gpu.sharing-strategy")
        if strategy not in ("time-slicing", "mps"):
            continue
        replicas = int(labels["nvidia.com/gpu.replicas"])
        advertised = sum(int(v) for k, v in node["status"]["capacity"].items() if k.startswith(GPU))
        assert advertised == int(labels["nvidia.com/gpu.count"]) * replicas
        counted[(strategy, labels["nvidia.com/gpu.product"].removesuffix("-SHARED"))] += advertised

    assert counted == mixed.truth.shared_replicas
    assert {s for s, _ in counted} == {"time-slicing", "mps"}


def parse_hami_register(value: str) -> list[tuple[str, int, int, int]]:
    if value.lstrip().startswith("["):
        return [(d["id"], d["count"], d["devmem"], d["devcore"]) for d in json.loads(value)]
    return [(f[0], int(f[1]), int(f[2]), int(f[3])) for f in (d.split(",") for d in value.split(":") if d)]


def test_hami_shares_match_the_register_annotations_in_both_encodings(mixed: Scenario) -> None:
    found = set()
    encodings = set()
    for node in of_kind(mixed, "Node"):
        value = node["metadata"].get("annotations", {}).get("hami.io/node-nvidia-register")
        if value:
            encodings.add(value.startswith("["))
            for uuid, split, memory, cores in parse_hami_register(value):
                found.add((node["metadata"]["name"], uuid, split, memory, cores))
            assert node["metadata"]["annotations"]["hami.io/node-handshake"].startswith("Reported ")

    assert found == set(mixed.truth.hami_devices)
    assert encodings == {True, False}


def test_each_dra_pool_publishes_all_its_slices_in_one_generation(dra_only: Scenario) -> None:
    slices_per_pool: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rs in of_kind(dra_only, "ResourceSlice"):
        slices_per_pool[rs["spec"]["pool"]["name"]].append(rs)

    assert set(slices_per_pool) == {pool for _, pool in dra_only.truth.dra_pools}
    devices: Counter[tuple[str, str]] = Counter()
    for pool, slices in slices_per_pool.items():
        assert {s["spec"]["pool"]["resourceSliceCount"] for s in slices} == {len(slices)}
        assert len({s["spec"]["pool"]["generation"] for s in slices}) == 1
        for rs in slices:
            for device in rs["spec"].get("devices", []):
                attrs = device["attributes"]
                kind = "gpu" if attrs["type"]["string"] == "gpu" else f"mig:{attrs['profile']['string']}"
                devices[(rs["spec"]["driver"], kind)] += 1
        truth = dra_only.truth.dra_pools[("gpu.nvidia.com", pool)]
        assert truth.slice_count == len(slices)
    assert devices == dra_only.truth.dra_devices
    assert any(t.counter_sets for t in dra_only.truth.dra_pools.values())


def claim_state(claim: dict[str, Any]) -> str:
    parts = ["deleted"] if claim["metadata"].get("deletionTimestamp") else []
    status = claim.get("status", {})
    if status.get("allocation"):
        parts.append("allocated")
        if status.get("reservedFor"):
            parts.append("reserved")
    elif not parts:
        parts.append("pending")
    return ",".join(parts)


def test_claims_by_state_and_pods_by_phase_match(dra_only: Scenario, mixed: Scenario) -> None:
    for scenario in (dra_only, mixed):
        claims = Counter(claim_state(c) for c in of_kind(scenario, "ResourceClaim"))
        phases = Counter(p["status"]["phase"] for p in of_kind(scenario, "Pod"))
        deleting = sum(1 for p in of_kind(scenario, "Pod") if p["metadata"].get("deletionTimestamp"))

        assert claims == scenario.truth.claims_by_state
        assert phases == scenario.truth.pods_by_phase
        assert deleting == scenario.truth.deleting_pods
    assert set(dra_only.truth.claims_by_state) == {
        "pending",
        "allocated",
        "allocated,reserved",
        "deleted,allocated,reserved",
    }
    assert {"Running", "Pending", "Succeeded", "Failed"} <= set(mixed.truth.pods_by_phase)


def holding_rows(scenario: Scenario) -> Counter[tuple[str, str, str, str, str, int]]:
    rows: Counter[tuple[str, str, str, str, str, int]] = Counter()
    for pod in of_kind(scenario, "Pod"):
        node = pod["spec"].get("nodeName")
        if not node or pod["status"]["phase"] in ("Succeeded", "Failed"):
            continue
        for container in pod["spec"]["containers"]:
            for resource, value in container["resources"].get("limits", {}).items():
                if resource.startswith("nvidia.com/"):
                    rows[
                        (
                            "Pod",
                            pod["metadata"]["namespace"],
                            pod["metadata"]["name"],
                            node,
                            resource,
                            int(value),
                        )
                    ] += 1
    classes = {}
    for claim in of_kind(scenario, "ResourceClaim"):
        classes[claim["metadata"]["name"]] = claim["spec"]["devices"]["requests"][0]["exactly"][
            "deviceClassName"
        ]
        for result in claim.get("status", {}).get("allocation", {}).get("devices", {}).get("results", []):
            rows[
                (
                    "ResourceClaim",
                    claim["metadata"]["namespace"],
                    claim["metadata"]["name"],
                    result["pool"],
                    classes[claim["metadata"]["name"]],
                    1,
                )
            ] += 1
    return rows


def test_open_allocations_are_the_holding_pods_and_the_allocated_claims(mixed: Scenario) -> None:
    recorded = Counter(
        (a.holder_kind, a.namespace, a.name, a.node, a.resource, a.count) for a in mixed.truth.allocations
    )

    assert recorded == holding_rows(mixed)
    units = {a.unit.split(":")[0] for a in mixed.truth.allocations}
    assert units == {"gpu", "mig", "time-slicing", "mps", "hami", "dra"}
    assert set(mixed.truth.allocations_by_namespace()) <= set(mixed.truth.namespaces)


def test_no_node_holds_more_than_it_advertises(mixed: Scenario) -> None:
    used: dict[str, Counter[str]] = defaultdict(Counter)
    for pod in of_kind(mixed, "Pod"):
        node = pod["spec"].get("nodeName")
        if node and pod["status"]["phase"] not in ("Succeeded", "Failed"):
            for container in pod["spec"]["containers"]:
                for resource, value in container["resources"].get("limits", {}).items():
                    used[node][resource] += int(value) if resource.startswith("nvidia.com/") else 0
    for node in of_kind(mixed, "Node"):
        allocatable = node["status"]["allocatable"]
        for resource, amount in used[node["metadata"]["name"]].items():
            if resource in HAMI:
                continue  # per-device, checked below
            if resource.startswith("nvidia.com/"):
                assert amount <= int(allocatable.get(resource, "0")), (node["metadata"]["name"], resource)


def test_hami_devices_never_give_out_more_memory_or_cores_than_registered(mixed: Scenario) -> None:
    capacity = {uuid: (memory, cores, split) for _, uuid, split, memory, cores in mixed.truth.hami_devices}
    used: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for pod in of_kind(mixed, "Pod"):
        value = pod["metadata"].get("annotations", {}).get("hami.io/vgpu-devices-allocated")
        if not value or pod["status"]["phase"] in ("Succeeded", "Failed"):
            continue
        for device in (d for c in value.split(";") for d in c.split(":") if d):
            uuid, _, memory, cores = device.split(",")
            used[uuid][0] += int(memory)
            used[uuid][1] += int(cores)
            used[uuid][2] += 1

    assert used
    for uuid, (memory, cores, slots) in used.items():
        assert memory <= capacity[uuid][0] and cores <= capacity[uuid][1] and slots <= capacity[uuid][2]


def test_dra_devices_are_allocated_once_and_match_their_request(dra_only: Scenario) -> None:
    devices = {}
    for rs in of_kind(dra_only, "ResourceSlice"):
        for device in rs["spec"].get("devices", []):
            devices[(rs["spec"]["pool"]["name"], device["name"])] = device
    taken: Counter[tuple[str, str]] = Counter()
    for claim in of_kind(dra_only, "ResourceClaim"):
        request = claim["spec"]["devices"]["requests"][0]["exactly"]
        for result in claim.get("status", {}).get("allocation", {}).get("devices", {}).get("results", []):
            device = devices[(result["pool"], result["device"])]
            taken[(result["pool"], result["device"])] += 1
            kind = device["attributes"]["type"]["string"]
            assert kind == ("gpu" if request["deviceClassName"] == "gpu.nvidia.com" else "mig")
            for selector in request.get("selectors", []):
                if "profile ==" in selector["cel"]["expression"]:
                    assert f"'{device['attributes']['profile']['string']}'" in selector["cel"]["expression"]
            assert claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0][
                "values"
            ] == [result["pool"]]

    assert taken and max(taken.values()) == 1


def test_partitionable_pools_never_consume_more_counters_than_a_gpu_has(dra_only: Scenario) -> None:
    counter_sets = {}
    consumption = {}
    for rs in of_kind(dra_only, "ResourceSlice"):
        pool = rs["spec"]["pool"]["name"]
        for counter_set in rs["spec"].get("sharedCounters", []):
            counter_sets[(pool, counter_set["name"])] = counter_set["counters"]
        for device in rs["spec"].get("devices", []):
            if "consumesCounters" in device:
                consumption[(pool, device["name"])] = device["consumesCounters"]
    used: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for claim in of_kind(dra_only, "ResourceClaim"):
        for result in claim.get("status", {}).get("allocation", {}).get("devices", {}).get("results", []):
            for consumed in consumption.get((result["pool"], result["device"]), []):
                for name, value in consumed["counters"].items():
                    used[(result["pool"], consumed["counterSet"])][name] += int(
                        value["value"].removesuffix("Mi")
                    )

    assert counter_sets and used
    for key, counters in used.items():
        for name, amount in counters.items():
            assert amount <= int(counter_sets[key][name]["value"].removesuffix("Mi")), (key, name)
