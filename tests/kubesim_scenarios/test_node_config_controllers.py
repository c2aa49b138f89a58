"""mig-manager and device-plugin: config labels change what a node advertises, safely."""

from __future__ import annotations

import pytest

from kubesim.errors import ApiError
from kubesim.eviction import evict_pod
from tests.kubesim_scenarios.controller_helpers import cluster, gpu_pod

MIG_CONFIG = "nvidia.com/mig.config"
STATE = "nvidia.com/mig.config.state"
DP_CONFIG = "nvidia.com/device-plugin.config"


def test_mig_reconfiguration_fails_while_gpu_pods_run_and_applies_on_the_next_label_change() -> None:
    """mig-parted cannot repartition GPUs in use; the manager tries once per label change."""
    # given an H100 all-balanced node with one MIG pod running
    c = cluster("mig-mixed", 1, enabled={"scheduler", "mig-manager", "pod-lifecycle"})
    node = c.nodes_of_pool("h100-mig-balanced")[0]
    c.store.create("pods", gpu_pod("busy", {"nvidia.com/mig-1g.10gb": "1"}))
    c.settle()
    assert c.pod("team-vision", "busy")["status"]["phase"] == "Running"

    # when the platform asks for seven 1g.10gb per GPU
    c.store.patch_merge("nodes", None, node, {"metadata": {"labels": {MIG_CONFIG: "all-1g.10gb"}}})
    c.settle()

    # then the node fails, unchanged, with a warning naming the pod
    current = c.node(node)
    assert current["metadata"]["labels"][STATE] == "failed"
    assert current["status"]["allocatable"]["nvidia.com/mig-3g.40gb"] == "8"
    [failed] = c.events("MigConfigFailed")
    assert "team-vision/busy" in failed["message"] and "In use by another client" in failed["message"]

    # when the node drains, nothing is retried by itself
    c.store.delete("pods", "team-vision", "busy")
    c.settle()
    assert c.node(node)["metadata"]["labels"][STATE] == "failed"

    # when the label goes back to the applied config (success at once, nothing touched) and on again
    c.store.patch_merge("nodes", None, node, {"metadata": {"labels": {MIG_CONFIG: "all-balanced"}}})
    c.settle()
    assert c.node(node)["metadata"]["labels"][STATE] == "success"
    assert c.node(node)["status"]["allocatable"]["nvidia.com/mig-3g.40gb"] == "8"
    c.store.patch_merge("nodes", None, node, {"metadata": {"labels": {MIG_CONFIG: "all-1g.10gb"}}})
    c.settle()

    # then the geometry is applied and capacity rewritten
    current = c.node(node)
    labels = current["metadata"]["labels"]
    assert labels[STATE] == "success"
    assert current["status"]["allocatable"]["nvidia.com/mig-1g.10gb"] == "56"
    assert current["status"]["allocatable"]["nvidia.com/mig-3g.40gb"] == "0"
    assert labels["nvidia.com/mig-1g.10gb.count"] == "56"
    assert not any(key.startswith("nvidia.com/mig-3g.40gb.") for key in labels)
    assert c.events("MigConfigApplied")


def test_mig_single_strategy_relabels_the_product_and_counts_mig_devices_as_gpus() -> None:
    c = cluster("mig-single", 2, enabled={"mig-manager"})
    node = c.nodes_of_pool("a100-40-mig-1g")[0]

    c.store.patch_merge("nodes", None, node, {"metadata": {"labels": {MIG_CONFIG: "all-3g.20gb"}}})
    c.settle()

    current = c.node(node)
    assert current["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB-MIG-3g.20gb"
    assert current["metadata"]["labels"]["nvidia.com/gpu.count"] == "16"
    assert current["status"]["capacity"]["nvidia.com/gpu"] == "16"


def test_an_unknown_or_impossible_mig_config_fails_and_changes_nothing() -> None:
    c = cluster("mig-mixed", 1, enabled={"mig-manager"})
    node = c.nodes_of_pool("h100-mig-balanced")[0]
    before = c.node(node)["status"]["allocatable"]

    c.store.patch_merge("nodes", None, node, {"metadata": {"labels": {MIG_CONFIG: "no-such-config"}}})
    c.settle()
    assert c.node(node)["metadata"]["labels"][STATE] == "failed"

    # all-1g.5gb names an A100-40GB profile: mig-parted cannot place it on an H100
    c.store.patch_merge("nodes", None, node, {"metadata": {"labels": {MIG_CONFIG: "all-1g.5gb"}}})
    c.settle()

    assert c.node(node)["metadata"]["labels"][STATE] == "failed"
    assert c.node(node)["status"]["allocatable"] == before
    assert len(c.events("MigConfigFailed")) == 2


def test_mig_reconfiguration_of_a_dra_node_publishes_a_new_pool_generation() -> None:
    c = cluster("dra", 3, enabled={"mig-manager"})
    node = c.nodes_of_pool("a100-80-dra-mig")[0]

    c.store.patch_merge("nodes", None, node, {"metadata": {"labels": {MIG_CONFIG: "all-3g.40gb"}}})
    c.settle()

    slices = [s for s in c.store.list("resourceslices") if s["spec"]["nodeName"] == node]
    assert {s["spec"]["pool"]["generation"] for s in slices} == {2}
    profiles = [d["attributes"]["profile"]["string"] for s in slices for d in s["spec"]["devices"]]
    assert profiles == ["3g.40gb"] * 16
    assert all(s["spec"]["pool"]["resourceSliceCount"] == len(slices) for s in slices)


def test_time_slicing_config_multiplies_allocatable_by_the_replicas() -> None:
    # given an untainted 8x L40S node without sharing
    c = cluster("exclusive", 2, enabled={"device-plugin"})
    node = c.nodes_of_pool("l40s-exclusive")[0]
    assert c.node(node)["status"]["allocatable"]["nvidia.com/gpu"] == "8"

    c.store.patch_merge("nodes", None, node, {"metadata": {"labels": {DP_CONFIG: "any"}}})
    c.settle()

    current = c.node(node)
    labels = current["metadata"]["labels"]
    assert current["status"]["allocatable"]["nvidia.com/gpu"] == "32"
    assert labels["nvidia.com/gpu.replicas"] == "4"
    assert labels["nvidia.com/gpu.sharing-strategy"] == "time-slicing"
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-L40S-SHARED"
    assert labels["nvidia.com/gpu.count"] == "8"


def test_rename_by_default_moves_the_shares_to_gpu_shared() -> None:
    c = cluster("exclusive", 2, enabled={"device-plugin"})
    node = c.nodes_of_pool("l40s-exclusive")[0]

    c.store.patch_merge("nodes", None, node, {"metadata": {"labels": {DP_CONFIG: "slice-4"}}})
    c.settle()

    current = c.node(node)
    assert current["status"]["allocatable"]["nvidia.com/gpu.shared"] == "32"
    assert current["status"]["allocatable"]["nvidia.com/gpu"] == "0"
    assert current["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-L40S"


def test_mps_and_back_to_exclusive() -> None:
    c = cluster("timeslicing", 3, enabled={"device-plugin"})
    node = c.nodes_of_pool("t4-timeslicing")[0]

    c.store.patch_merge("nodes", None, node, {"metadata": {"labels": {DP_CONFIG: "mps-two"}}})
    c.settle()
    assert c.node(node)["status"]["allocatable"]["nvidia.com/gpu"] == "16"
    assert c.node(node)["metadata"]["labels"]["nvidia.com/gpu.sharing-strategy"] == "mps"

    c.store.patch_merge("nodes", None, node, {"metadata": {"labels": {DP_CONFIG: None}}})
    c.settle()
    assert c.node(node)["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert c.node(node)["metadata"]["labels"]["nvidia.com/gpu.product"] == "Tesla-T4"


def test_an_unknown_device_plugin_config_keeps_the_node_as_it_is() -> None:
    c = cluster("timeslicing", 3, enabled={"device-plugin"})
    node = c.nodes_of_pool("t4-timeslicing")[0]
    before = c.node(node)["status"]["allocatable"]

    c.store.patch_merge("nodes", None, node, {"metadata": {"labels": {DP_CONFIG: "does-not-exist"}}})
    c.settle()

    assert c.node(node)["status"]["allocatable"] == before
    assert len(c.events("InvalidDevicePluginConfig")) == 1


def test_a_config_map_edit_is_what_the_device_plugin_applies() -> None:
    c = cluster("exclusive", 2, enabled={"device-plugin"})
    node = c.nodes_of_pool("l40s-exclusive")[0]
    c.store.patch_merge(
        "configmaps",
        "gpu-operator",
        "device-plugin-config",
        {
            "data": {
                "platform-ts-3": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                "    - name: nvidia.com/gpu\n      replicas: 3\n"
            }
        },
    )

    c.store.patch_merge("nodes", None, node, {"metadata": {"labels": {DP_CONFIG: "platform-ts-3"}}})
    c.settle()

    assert c.node(node)["status"]["allocatable"]["nvidia.com/gpu"] == "24"


def test_resource_naming_in_the_config_is_ignored_as_the_released_plugin_does() -> None:
    """k8s-device-plugin's DisableResourceNamingInConfig drops `resources` patterns and resets
    `rename`; the plugin logs that it ignores them, and the node advertises nvidia.com/gpu."""
    c = cluster("exclusive", 2, enabled={"device-plugin"})
    node = c.nodes_of_pool("l40s-exclusive")[0]
    c.store.patch_merge(
        "configmaps",
        "gpu-operator",
        "device-plugin-config",
        {
            "data": {
                "pool-a": "version: v1\nresources:\n  gpus:\n  - pattern: '*L40S*'\n    name: gpu-pool-a\n"
                "sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
                "      rename: gpu-pool-a\n      replicas: 2\n"
            }
        },
    )

    c.store.patch_merge("nodes", None, node, {"metadata": {"labels": {DP_CONFIG: "pool-a"}}})
    c.settle()

    allocatable = c.node(node)["status"]["allocatable"]
    assert allocatable["nvidia.com/gpu"] == "16"  # 8 GPUs x 2 replicas, under the default name
    assert not any("pool-a" in name for name in allocatable)
    assert sorted(e["message"] for e in c.events("DevicePluginConfigIgnored")) == [
        "Customizing the 'resources' field is not yet supported in the config. Ignoring...",
        "Setting the 'rename' field in sharing.timeSlicing.resources is not yet supported in the config. "
        "Ignoring...",
    ]


def test_a_planned_mig_change_cordons_evicts_within_the_budget_then_applies() -> None:
    """The platform's planned operation on kubesim: cordon, evict through the Eviction API (the budget
    holds the second pod until relaxed), then the MIG label applies on the idle node."""
    c = cluster("mig-mixed", 1, enabled={"scheduler", "mig-manager", "pod-lifecycle", "disruption"})
    node = c.nodes_of_pool("h100-mig-balanced")[0]
    for name in ("train-1", "train-2"):
        pod = gpu_pod(name, {"nvidia.com/mig-1g.10gb": "1"})
        pod["metadata"]["labels"] = {"app": "train"}
        c.store.create("pods", pod)
    c.store.create(
        "poddisruptionbudgets",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "train", "namespace": "team-vision"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "train"}}},
        },
    )
    c.settle()
    assert c.store.get("poddisruptionbudgets", "team-vision", "train")["status"]["disruptionsAllowed"] == 1

    c.store.patch_merge("nodes", None, node, {"spec": {"unschedulable": True}})
    evict_pod(c.store, "team-vision", "train-1")
    with pytest.raises(ApiError) as held:
        evict_pod(c.store, "team-vision", "train-2")
    c.store.patch_merge("poddisruptionbudgets", "team-vision", "train", {"spec": {"minAvailable": 0}})
    c.settle()
    evict_pod(c.store, "team-vision", "train-2")
    c.store.patch_merge("nodes", None, node, {"metadata": {"labels": {MIG_CONFIG: "all-1g.10gb"}}})
    c.settle()

    assert held.value.status == 429 and held.value.causes[0]["reason"] == "DisruptionBudget"
    current = c.node(node)
    assert current["metadata"]["labels"][STATE] == "success"
    assert current["status"]["allocatable"]["nvidia.com/mig-1g.10gb"] == "56"
    assert not c.events("MigConfigFailed")
