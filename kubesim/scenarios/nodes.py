"""GPU Node objects: GFD labels, device plugin resources, HAMi annotations, operator labels and status."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

from kubesim.scenarios.device_plugin_view import (
    DEVICE_PLUGIN_CONFIGS,
    GPU,
    SharingConfig,
    render_gpu_state,
)
from kubesim.scenarios.gpu_models import GpuModel
from kubesim.scenarios.hami import HAMI_SPLIT_COUNT, hami_register_annotations
from kubesim.scenarios.ids import Timestamps, gpu_uuid, stable_uuid
from kubesim.scenarios.mig_geometry import PlacedInstance, resolve_mig_config
from kubesim.scenarios.pools import PoolSpec
from kubesim.scenarios.truth import NodeTruth

# Annotations kubesim keeps on GPU nodes to stand for what NVML would tell the node agents: the
# physical hardware and the config the simulated data plane last applied. Real nodes have no such
# annotations; controllers need them to re-render labels and capacity after a config change.
ANNOTATION_PREFIX = "kubesim.gpuplatform.io/"
HW_MODEL = ANNOTATION_PREFIX + "gpu-model"
HW_COUNT = ANNOTATION_PREFIX + "gpu-count"
MIG_APPLIED = ANNOTATION_PREFIX + "mig-config-applied"
DP_APPLIED = ANNOTATION_PREFIX + "device-plugin-config-applied"
POOL_LABEL = "gpuplatform.io/node-pool"
CLIQUE_LABEL = "nvidia.com/gpu.clique"  # GFD's, and the DRA driver's compute-domain plugin's
RACK_LABEL = "topology.kubesim.io/rack"  # no standard key: a platform names its own in settings
MECHANISM_LABEL = "gpuplatform.io/sharing-mechanism"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}

MIG_CONFIG = "nvidia.com/mig.config"
MIG_CONFIG_STATE = "nvidia.com/mig.config.state"
DEVICE_PLUGIN_CONFIG = "nvidia.com/device-plugin.config"


@dataclass(frozen=True)
class Machine:
    cpu: int
    memory_ki: int


# Host shapes of the servers these GPUs ship in (8-GPU HGX / PCIe servers, g4dn.metal for T4).
MACHINES = {
    "H100-80GB-HBM3": Machine(224, 2113424436),
    "H200": Machine(224, 2113424436),
    "A100-SXM4-40GB": Machine(96, 1056762036),
    "A100-80GB-PCIe": Machine(96, 1056762036),
    "L40S": Machine(128, 1056762036),
    "T4": Machine(96, 395895000),
}
SYSTEM_RESERVED_CPU = 1
SYSTEM_RESERVED_MEMORY_KI = 10 * 1024 * 1024


@dataclass
class BuiltNode:
    obj: dict[str, Any]
    truth: NodeTruth
    layout: list[list[PlacedInstance]]
    uuids: list[str]


def sharing_for(pool: PoolSpec) -> SharingConfig:
    if pool.device_plugin_config is None:
        return SharingConfig()
    return DEVICE_PLUGIN_CONFIGS[pool.device_plugin_config]


def mig_strategy_for(pool: PoolSpec, model: GpuModel) -> str:
    if pool.mechanism == "mig-single":
        return "single"
    if pool.mechanism == "mig-mixed" or (pool.mechanism == "dra" and pool.dra_mode == "mig"):
        return "mixed"
    return "single" if model.mig_capable else "none"


def build_node(
    *,
    name: str,
    pool: PoolSpec,
    model: GpuModel,
    gpus: int,
    zone: str,
    ts: Timestamps,
    age_seconds: int,
    cordoned: bool = False,
    ready: bool = True,
    clique: str = "",
) -> BuiltNode:
    layout = resolve_mig_config(pool.mig_config, model, gpus) if model.mig_capable else None
    if layout is None:
        layout = [[] for _ in range(gpus)]
    mig_strategy = mig_strategy_for(pool, model)
    sharing = sharing_for(pool)
    state = render_gpu_state(model, gpus, layout, mig_strategy, sharing)
    resources = dict(state.resources)
    hami = pool.mechanism == "hami"
    dra = pool.mechanism == "dra"
    if hami:
        # HAMi's device plugin advertises vGPU slots: physical GPUs x deviceSplitCount (HAMi#1173).
        resources = {GPU: gpus * HAMI_SPLIT_COUNT}
    elif dra:
        resources = {}

    labels: dict[str, str] = {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": model.machine,
        "topology.kubernetes.io/region": "eu-west-1",
        "topology.kubernetes.io/zone": zone,
        "feature.node.kubernetes.io/pci-10de.present": "true",
        POOL_LABEL: pool.name,
        MECHANISM_LABEL: pool.mechanism,
    }
    labels.update(_driver_labels(dra))
    labels.update(_deploy_labels(model, device_plugin=not (hami or dra)))
    labels["nvidia.com/gfd.timestamp"] = str(1767000000 + age_seconds % 86400)
    labels.update(state.labels)
    if model.mig_capable:
        labels[MIG_CONFIG] = pool.mig_config
        labels[MIG_CONFIG_STATE] = "success"
    if pool.device_plugin_config is not None:
        labels[DEVICE_PLUGIN_CONFIG] = pool.device_plugin_config
    if hami:
        labels["gpu"] = "on"  # the HAMi chart's device plugin nodeSelector
    if clique:
        # <NVLink domain (cluster UUID)>.<clique id>; a clique's trays share a rack.
        labels[CLIQUE_LABEL] = clique
        labels[RACK_LABEL] = f"rack-{clique.rsplit('.', 1)[-1]}"

    annotations: dict[str, str] = {
        HW_MODEL: model.key,
        HW_COUNT: str(gpus),
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
    }
    if model.mig_capable:
        annotations[MIG_APPLIED] = pool.mig_config
    if pool.device_plugin_config is not None:
        annotations[DP_APPLIED] = pool.device_plugin_config
    uuids = [gpu_uuid(name, i) for i in range(gpus)]
    if hami:
        # Both live encodings of the register annotation, alternating node by node.
        legacy = not name[-1:].isdigit() or int(name[-1]) % 2 == 0
        annotations.update(hami_register_annotations(model, uuids, ts, legacy=legacy))

    machine = MACHINES[model.key]
    capacity = {
        "cpu": str(machine.cpu),
        "ephemeral-storage": "1950447104Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": f"{machine.memory_ki}Ki",
        "pods": "110",
    }
    allocatable = dict(capacity)
    allocatable["cpu"] = str(machine.cpu - SYSTEM_RESERVED_CPU)
    allocatable["memory"] = f"{machine.memory_ki - SYSTEM_RESERVED_MEMORY_KI}Ki"
    allocatable["ephemeral-storage"] = "1797532048071"
    for resource, count in resources.items():
        capacity[resource] = str(count)
        allocatable[resource] = str(count)

    spec: dict[str, Any] = {"podCIDR": _pod_cidr(name), "providerID": f"kubesim://{zone}/{name}"}
    if pool.tainted:
        spec["taints"] = [dict(GPU_TAINT)]
    if cordoned:
        spec["unschedulable"] = True
        spec.setdefault("taints", []).append(
            {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": ts.ago(600)}
        )
    if not ready:
        spec.setdefault("taints", []).append(
            {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": ts.ago(300)}
        )

    obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": stable_uuid("node", name),
            "labels": labels,
            "annotations": annotations,
            "creationTimestamp": ts.ago(age_seconds),
        },
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": _conditions(ts, age_seconds, ready),
            "addresses": [
                {"type": "InternalIP", "address": _internal_ip(name)},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": stable_uuid("boot", name),
                "containerRuntimeVersion": "containerd://1.7.27",
                "kernelVersion": "6.8.0-1015-aws",
                "kubeProxyVersion": "",
                "kubeletVersion": "v1.35.0",
                "machineID": stable_uuid("machine", name).replace("-", ""),
                "operatingSystem": "linux",
                "osImage": "Ubuntu 24.04.1 LTS",
                "systemUUID": stable_uuid("system", name),
            },
        },
    }
    truth = NodeTruth(
        name=name,
        pool=pool.name,
        mechanism=pool.mechanism,
        model=model.key,
        product=model.product,
        gpus=gpus,
        mig_config=pool.mig_config if model.mig_capable else None,
        mig_strategy=mig_strategy if model.mig_capable else None,
        mig_profiles=_profile_counts(layout),
        sharing_strategy=sharing.strategy,
        replicas=sharing.replicas_for(GPU) if sharing.strategy != "none" else 1,
        resources=resources,
        cordoned=cordoned,
        ready=ready,
    )
    return BuiltNode(obj, truth, layout, uuids)


def zlib_crc(text: str) -> int:
    return zlib.crc32(text.encode())


def _profile_counts(layout: list[list[PlacedInstance]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for gpu in layout:
        for inst in gpu:
            counts[inst.profile.name] = counts.get(inst.profile.name, 0) + 1
    return counts


def _driver_labels(dra: bool) -> dict[str, str]:
    # Driver 550.54.15 / CUDA 12.4 from the GFD dumps; DRA nodes run the newer 580 branch (#719).
    major, minor, rev, cuda = ("580", "95", "05", "13.0") if dra else ("550", "54", "15", "12.4")
    cuda_major, cuda_minor = cuda.split(".")
    return {
        "nvidia.com/cuda.driver-version.full": f"{major}.{minor}.{rev}",
        "nvidia.com/cuda.driver-version.major": major,
        "nvidia.com/cuda.driver-version.minor": minor,
        "nvidia.com/cuda.driver-version.revision": rev,
        "nvidia.com/cuda.driver.major": major,
        "nvidia.com/cuda.driver.minor": minor,
        "nvidia.com/cuda.driver.rev": rev,
        "nvidia.com/cuda.runtime-version.full": cuda,
        "nvidia.com/cuda.runtime-version.major": cuda_major,
        "nvidia.com/cuda.runtime-version.minor": cuda_minor,
        "nvidia.com/cuda.runtime.major": cuda_major,
        "nvidia.com/cuda.runtime.minor": cuda_minor,
        "nvidia.com/gpu-driver-upgrade-state": "upgrade-done",
    }


def _deploy_labels(model: GpuModel, *, device_plugin: bool) -> dict[str, str]:
    labels = {
        "nvidia.com/gpu.deploy.container-toolkit": "true",
        "nvidia.com/gpu.deploy.dcgm": "true",
        "nvidia.com/gpu.deploy.dcgm-exporter": "true",
        # The operator's switch to keep its device plugin off nodes served by HAMi or the DRA driver.
        "nvidia.com/gpu.deploy.device-plugin": "true" if device_plugin else "false",
        "nvidia.com/gpu.deploy.driver": "true",
        "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
        "nvidia.com/gpu.deploy.node-status-exporter": "true",
        "nvidia.com/gpu.deploy.operator-validator": "true",
    }
    if model.mig_capable:
        labels["nvidia.com/gpu.deploy.mig-manager"] = "true"
    return labels


def _conditions(ts: Timestamps, age: int, ready: bool) -> list[dict[str, Any]]:
    heartbeat = ts.ago(30)
    since = ts.ago(age)
    conditions = []
    for kind, reason, message in (
        ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ):
        conditions.append(
            {
                "type": kind,
                "status": "False",
                "reason": reason,
                "message": message,
                "lastHeartbeatTime": heartbeat,
                "lastTransitionTime": since,
            }
        )
    if ready:
        conditions.append(
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "lastHeartbeatTime": heartbeat,
                "lastTransitionTime": since,
            }
        )
    else:
        conditions.append(
            {
                "type": "Ready",
                "status": "Unknown",
                "reason": "NodeStatusUnknown",
                "message": "Kubelet stopped posting node status.",
                "lastHeartbeatTime": ts.ago(600),
                "lastTransitionTime": ts.ago(300),
            }
        )
    return conditions


def _internal_ip(name: str) -> str:
    n = zlib_crc(name)
    return f"10.{(n >> 16) & 0xFF}.{(n >> 8) & 0xFF}.{n & 0xFF or 1}"


def _pod_cidr(name: str) -> str:
    n = zlib_crc(name)
    return f"10.{128 + ((n >> 16) & 0x3F)}.{(n >> 8) & 0xFF}.0/24"
