"""Cluster-wide objects around the GPU nodes: namespaces, operator ConfigMaps, daemon pods."""

from __future__ import annotations

from typing import Any

import yaml

from kubesim.scenarios.device_plugin_view import DEVICE_PLUGIN_CONFIG_TEXT
from kubesim.scenarios.hami import HAMI_SPLIT_COUNT
from kubesim.scenarios.ids import name_suffix
from kubesim.scenarios.mig_geometry import MIG_PARTED_CONFIGS
from kubesim.scenarios.nodes import BuiltNode
from kubesim.scenarios.workloads import WorkloadContext, node_ip

GPU_OPERATOR_NAMESPACE = "gpu-operator"
SYSTEM_NAMESPACES = ("kube-system", GPU_OPERATOR_NAMESPACE)
DEFAULT_TENANT_NAMESPACES = ("team-vision", "team-nlp", "team-recsys", "team-infra", "sandbox-unowned")
# Where the simulated mig-manager and device plugin read their configs (the operator's defaults).
MIG_PARTED_CONFIGMAP = "default-mig-parted-config"
DEVICE_PLUGIN_CONFIGMAP = "device-plugin-config"


def namespace(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def mig_parted_config_yaml() -> str:
    configs: dict[str, Any] = {}
    for name, entries in MIG_PARTED_CONFIGS.items():
        rendered = []
        for entry in entries:
            item: dict[str, Any] = {}
            if entry.device_filter:
                item["device-filter"] = list(entry.device_filter)
            item["devices"] = entry.devices if entry.devices == "all" else list(entry.devices)
            item["mig-enabled"] = entry.mig_enabled
            if entry.mig_enabled:
                item["mig-devices"] = dict(entry.mig_devices)
            rendered.append(item)
        configs[name] = rendered
    return yaml.safe_dump({"version": "v1", "mig-configs": configs}, sort_keys=False)


def operator_config_maps(with_hami: bool) -> list[dict[str, Any]]:
    maps = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": MIG_PARTED_CONFIGMAP, "namespace": GPU_OPERATOR_NAMESPACE},
            "data": {"config.yaml": mig_parted_config_yaml()},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": DEVICE_PLUGIN_CONFIGMAP, "namespace": GPU_OPERATOR_NAMESPACE},
            "data": dict(DEVICE_PLUGIN_CONFIG_TEXT),
        },
    ]
    if with_hami:
        maps.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "hami-scheduler-device", "namespace": "kube-system"},
                "data": {
                    "device-config.yaml": "nvidia:\n  resourceCountName: nvidia.com/gpu\n"
                    "  resourceMemoryName: nvidia.com/gpumem\n"
                    "  resourceMemoryPercentageName: nvidia.com/gpumem-percentage\n"
                    "  resourceCoreName: nvidia.com/gpucores\n  resourcePriorityName: nvidia.com/priority\n"
                    f"  deviceSplitCount: {HAMI_SPLIT_COUNT}\n"
                    "  deviceMemoryScaling: 1\n  deviceCoreScaling: 1\n"
                },
            }
        )
    return maps


def daemon_pods(ctx: WorkloadContext, built: BuiltNode, age: int) -> list[dict[str, Any]]:
    """Five daemon pods per GPU node: the operator's four plus the node's device plugin of choice."""
    mechanism = built.truth.mechanism
    node = built.obj
    name = node["metadata"]["name"]
    plugin, plugin_namespace = {
        "hami": ("hami-device-plugin", "kube-system"),
        "dra": ("nvidia-dra-driver-gpu-kubelet-plugin", GPU_OPERATOR_NAMESPACE),
    }.get(mechanism, ("nvidia-device-plugin-daemonset", GPU_OPERATOR_NAMESPACE))
    kinds = [
        ("gpu-feature-discovery", GPU_OPERATOR_NAMESPACE),
        ("nvidia-container-toolkit-daemonset", GPU_OPERATOR_NAMESPACE),
        ("nvidia-dcgm-exporter", GPU_OPERATOR_NAMESPACE),
        ("nvidia-operator-validator", GPU_OPERATOR_NAMESPACE),
        (plugin, plugin_namespace),
    ]
    pods = []
    for kind, pod_namespace in kinds:
        pod = ctx.factory.pod(
            name=f"{kind}-{name_suffix(ctx.rng)}",
            namespace=pod_namespace,
            uid=ctx.pod_uid(),
            kind=kind,
            state="Running",
            containers=ctx.factory.containers(kind, (), "", ""),
            age=age,
            node=name,
            node_ip=node_ip(node),
            pod_ip=node_ip(node),  # hostNetwork daemons report the node's address
            tolerations=ctx.factory.gpu_tolerations,
        )
        pods.append(pod)
        ctx.truth.pods_by_phase["Running"] += 1
    return pods
