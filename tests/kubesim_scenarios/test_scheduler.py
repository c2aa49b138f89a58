"""The scheduler binds GPU pods within what nodes advertise, and says why when it cannot."""

from __future__ import annotations

from collections import Counter, defaultdict

from kubesim.scenarios import hami
from tests.kubesim_scenarios.controller_helpers import cluster, gpu_pod, scheduled_condition

GPU = "nvidia.com/gpu"


def test_it_binds_pods_up_to_allocatable_and_leaves_the_rest_unschedulable() -> None:
    # given two 8-GPU nodes (H100 tainted, L40S not)
    c = cluster("exclusive", 2, enabled={"scheduler"})
    for i in range(20):
        c.store.create("pods", gpu_pod(f"train-{i:02d}", {GPU: "1"}))

    # when
    c.settle()

    # then
    pods = [c.pod("team-vision", f"train-{i:02d}") for i in range(20)]
    per_node = Counter(p["spec"].get("nodeName") for p in pods)
    assert per_node.pop(None) == 4
    assert sorted(per_node.values()) == [8, 8]
    waiting = [p for p in pods if not p["spec"].get("nodeName")]
    condition = scheduled_condition(waiting[0])
    assert condition["status"] == "False" and condition["reason"] == "Unschedulable"
    assert condition["message"] == (
        "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are available: "
        "2 No preemption victims found for incoming pod."
    )
    assert len(c.events("FailedScheduling")) == 4
    assert scheduled_condition(pods[0])["status"] == "True"


def test_it_never_overcommits_a_node_across_passes() -> None:
    c = cluster("exclusive", 2, enabled={"scheduler"})
    for i in range(6):
        c.store.create("pods", gpu_pod(f"big-{i}", {GPU: "4"}))
        c.controllers.run_once()
    c.settle()

    used: dict[str, int] = defaultdict(int)
    for pod in c.store.list("pods", namespace="team-vision"):
        if pod["spec"].get("nodeName"):
            used[pod["spec"]["nodeName"]] += 4
    for node, amount in used.items():
        assert amount <= int(c.node(node)["status"]["allocatable"][GPU])
    assert sum(used.values()) == 16


def test_it_explains_selector_and_taint_mismatches_like_kube_scheduler() -> None:
    c = cluster("exclusive", 2, enabled={"scheduler"})
    c.store.create(
        "pods", gpu_pod("wants-t4", {GPU: "1"}, node_selector={"nvidia.com/gpu.product": "Tesla-T4"})
    )
    c.store.create(
        "pods",
        gpu_pod(
            "no-toleration",
            {GPU: "1"},
            tolerate=False,
            node_selector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
        ),
    )

    c.settle()

    assert scheduled_condition(c.pod("team-vision", "wants-t4"))["message"].startswith(
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
    )
    message = scheduled_condition(c.pod("team-vision", "no-toleration"))["message"]
    assert "1 node(s) had untolerated taint {nvidia.com/gpu: present}" in message
    assert "1 node(s) didn't match Pod's node affinity/selector" in message


def test_it_honours_required_node_affinity_on_the_product_label() -> None:
    c = cluster("exclusive", 2, enabled={"scheduler"})
    pod = gpu_pod("affine", {GPU: "2"})
    pod["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-L40S"]}
                        ]
                    }
                ]
            }
        }
    }
    c.store.create("pods", pod)

    c.settle()

    node = c.pod("team-vision", "affine")["spec"]["nodeName"]
    assert c.node(node)["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-L40S"


def test_it_skips_cordoned_nodes() -> None:
    c = cluster("exclusive", 2, enabled={"scheduler"})
    for name in [n["metadata"]["name"] for n in c.store.list("nodes")]:
        c.store.patch_merge("nodes", None, name, {"spec": {"unschedulable": True}})
    c.store.create("pods", gpu_pod("stuck", {GPU: "1"}))

    c.settle()

    assert "2 node(s) were unschedulable" in scheduled_condition(c.pod("team-vision", "stuck"))["message"]


def test_an_unschedulable_pod_is_retried_when_capacity_frees_up() -> None:
    c = cluster("exclusive", 1, enabled={"scheduler"})
    c.store.create("pods", gpu_pod("first", {GPU: "8"}))
    c.settle()
    c.store.create("pods", gpu_pod("second", {GPU: "8"}))
    c.settle()
    assert not c.pod("team-vision", "second")["spec"].get("nodeName")

    c.store.delete("pods", "team-vision", "first")
    c.settle()

    assert c.pod("team-vision", "second")["spec"].get("nodeName")


def test_mig_mixed_pods_get_their_profile_and_single_strategy_pods_count_mig_devices() -> None:
    c = cluster("mig-mixed", 1, enabled={"scheduler"})
    for i in range(10):
        c.store.create("pods", gpu_pod(f"mig-{i}", {"nvidia.com/mig-3g.40gb": "1"}))

    c.settle()

    bound = [p for p in c.store.list("pods", namespace="team-vision") if p["spec"].get("nodeName")]
    assert len(bound) == 8  # all-balanced: one 3g.40gb per GPU


def test_hami_pods_share_gpus_by_memory_and_cores_without_exceeding_a_device() -> None:
    # given one A100 80GB HAMi node: 8 GPUs of 81920 MiB, 10 slots each
    c = cluster("hami", 1, enabled={"scheduler", "pod-lifecycle"})
    for i in range(20):
        c.store.create(
            "pods",
            gpu_pod(
                f"share-{i:02d}",
                {GPU: "1", "nvidia.com/gpumem": "30000", "nvidia.com/gpucores": "30"},
                scheduler="hami-scheduler",
            ),
        )

    c.settle()

    pods = c.store.list("pods", namespace="team-vision")
    bound = [p for p in pods if p["spec"].get("nodeName")]
    assert len(bound) == 16  # two 30000 MiB shares fit in 81920 MiB, on each of 8 GPUs
    memory: Counter[str] = Counter()
    for pod in bound:
        annotations = pod["metadata"]["annotations"]
        assert annotations["hami.io/bind-phase"] == "success"
        assert annotations["hami.io/vgpu-node"] == pod["spec"]["nodeName"]
        uuid, vendor, mem, cores = (
            annotations["hami.io/vgpu-devices-allocated"].rstrip(";").rstrip(":").split(",")
        )
        assert (vendor, mem, cores) == ("NVIDIA", "30000", "30")
        memory[uuid] += int(mem)
    assert max(memory.values()) <= 81920
    waiting = [p for p in pods if not p["spec"].get("nodeName")]
    assert "AllocatedCardsInsufficientRequest" in scheduled_condition(waiting[0])["message"]


def test_hami_places_nothing_on_a_gpu_it_cordons_until_the_cordon_is_lifted() -> None:
    # given one A100 80GB HAMi node (8 GPUs, two 30000 MiB shares each) with 2 GPUs cordoned by
    # `hami.io/device-cordon`, written with blanks and a UUID the node does not have
    c = cluster("hami", 1, enabled={"scheduler", "pod-lifecycle"})
    (node,) = c.store.list("nodes")
    name = node["metadata"]["name"]
    gpus = [d.uuid for d in hami.parse_register(node["metadata"]["annotations"][hami.REGISTER])]
    cordon = f" {gpus[0]} ,, {gpus[5]},GPU-ffffffff-0000-4000-8000-00000000dead"
    c.store.patch_merge("nodes", None, name, {"metadata": {"annotations": {hami.DEVICE_CORDON: cordon}}})
    for i in range(20):
        c.store.create(
            "pods",
            gpu_pod(
                f"share-{i:02d}",
                {GPU: "1", "nvidia.com/gpumem": "30000", "nvidia.com/gpucores": "30"},
                scheduler="hami-scheduler",
            ),
        )

    c.settle()

    def placed() -> Counter[str]:
        on: Counter[str] = Counter()
        for pod in c.store.list("pods", namespace="team-vision"):
            allocated = (pod["metadata"].get("annotations") or {}).get(hami.ALLOCATED)
            if pod["spec"].get("nodeName") and allocated:
                on[allocated.split(",")[0]] += 1
        return on

    # 6 GPUs x 2 shares; the cordoned two get none, and the rest wait for a card
    assert sum(placed().values()) == 12 and not {gpus[0], gpus[5]} & set(placed())
    waiting = [p for p in c.store.list("pods", namespace="team-vision") if not p["spec"].get("nodeName")]
    assert "AllocatedCardsInsufficientRequest" in scheduled_condition(waiting[0])["message"]

    c.store.patch_merge("nodes", None, name, {"metadata": {"annotations": {hami.DEVICE_CORDON: None}}})
    c.settle()

    assert placed()[gpus[0]] == 2 and placed()[gpus[5]] == 2 and sum(placed().values()) == 16
