"""Policy -> the native configs a node agent applies: the bundle {files, labels, configmaps}.

Byte-stable: the same policy, pool and revision always render the same bytes (dicts built in a fixed
order, YAML dumped without key sorting from those dicts, lists sorted), so a content hash only moves
when the configuration does. Shapes follow realworld/: device plugin ``version: v1`` configs
(api/config/v1 of NVIDIA/k8s-device-plugin), mig-parted ``version: v1`` ``mig-configs``, HAMi's
scheduler device config, and the GPU Operator's selection labels.
"""

from __future__ import annotations

import hashlib
from typing import Any

import yaml

from inventory.domain.gpu_models import resolve_gpu_model
from policies.compiler.naming import mig_resource_name, pool_resource_name
from policies.compiler.spec import MigStrategy, PoolSpec, SharingMode, SharingSpec

__all__ = [
    "DEVICE_PLUGIN_CONFIGMAP",
    "GPU_OPERATOR_NAMESPACE",
    "HAMI_CONFIGMAP",
    "MIG_PARTED_CONFIGMAP",
    "config_name",
    "dump_yaml",
    "mig_management_parts",
    "render_bundle",
]

GPU_OPERATOR_NAMESPACE = "gpu-operator"
# One ConfigMap the operator's devicePlugin.config.name points at; each pool owns its own key (a
# node picks its key with nvidia.com/device-plugin.config). Apply with a field manager per pool, so
# server-side apply gives each pool ownership of its keys only (ConfigMap data is a granular map).
DEVICE_PLUGIN_CONFIGMAP = "gpuplatform-device-plugin"
MIG_PARTED_CONFIGMAP = "gpuplatform-mig-parted"
HAMI_CONFIGMAP = "gpuplatform-hami-device"
ALL_DISABLED = "all-disabled"  # the name mig-parted's default config gives "MIG off on every GPU"

# PCI device+vendor ids per model, from mig-parted's default config
# (realworld/mig-parted-config-default.yaml), used as device-filter when one pool mixes MIG models.
_PCI_IDS = {
    "A100-40GB": ("0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE"),
    "A100-80GB": ("0x20B210DE", "0x20B510DE", "0x20F310DE", "0x20F510DE"),
    "H100-80GB": ("0x233010DE", "0x233110DE"),
    "H100-NVL-94GB": ("0x232110DE", "0x233A10DE"),
    "H200-141GB": ("0x233510DE", "0x233B10DE"),
    "A30-24GB": ("0x20B710DE",),
}


class _Dumper(yaml.SafeDumper):
    """Block style, lists indented under their key as in the upstream examples."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def dump_yaml(value: Any) -> str:
    return yaml.dump(value, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1000)


def config_name(pool: str, revision: int) -> str:
    """The config key and label value of a pool's revision: ``gpuplatform-<pool>-r<N>``, at most 63
    characters (a label value's limit), cut and hashed when the pool's name is long."""
    slug = "".join(c if c.isalnum() or c in "-." else "-" for c in pool.lower()).strip("-.") or "pool"
    tail = f"-r{revision}"
    name = f"gpuplatform-{slug}{tail}"
    if len(name) <= 63:
        return name
    digest = hashlib.sha256(pool.encode()).hexdigest()[:8]
    room = 63 - len(f"gpuplatform--{digest}{tail}")
    return f"gpuplatform-{slug[:room].rstrip('-.')}-{digest}{tail}"


def _device_plugin_config(spec: SharingSpec, pool: PoolSpec) -> dict[str, Any] | None:
    p, mode = spec.parameters, spec.mode
    resource = spec.resource_name or pool_resource_name(pool.name)
    if mode == SharingMode.EXCLUSIVE:
        return {
            "version": "v1",
            "flags": {"migStrategy": "none"},
            "resources": {"gpus": [{"pattern": "*", "name": resource}]},
        }
    if mode in (SharingMode.TIME_SLICING, SharingMode.MPS):
        replicated: dict[str, Any] = {}
        if mode == SharingMode.TIME_SLICING:
            replicated["failRequestsGreaterThanOne"] = bool(p.get("fail_requests_greater_than_one"))
        replicated["resources"] = [
            {"name": "nvidia.com/gpu", "rename": resource, "devices": "all", "replicas": int(p["replicas"])}
        ]
        key = "timeSlicing" if mode == SharingMode.TIME_SLICING else "mps"
        return {"version": "v1", "flags": {"migStrategy": "none"}, "sharing": {key: replicated}}
    if mode == SharingMode.MIG:
        strategy = str(p.get("strategy") or MigStrategy.MIXED)
        config: dict[str, Any] = {"version": "v1", "flags": {"migStrategy": strategy}}
        if strategy == MigStrategy.MIXED:
            profiles = sorted({name for per_card in (p.get("geometry") or {}).values() for name in per_card})
            config["resources"] = {
                "gpus": [{"pattern": "*", "name": resource}],
                "mig": [{"pattern": name, "name": mig_resource_name(pool.name, name)} for name in profiles],
            }
        else:
            config["resources"] = {
                "gpus": [{"pattern": "*", "name": resource}],
                "mig": [{"pattern": "*", "name": resource}],
            }
        return config
    return None  # HAMi and DRA: the NVIDIA device plugin does not run on the pool


def _mig_parted_config(spec: SharingSpec, pool: PoolSpec, name: str) -> dict[str, Any]:
    geometry = spec.parameters.get("geometry") or {}
    entries: list[dict[str, Any]] = []
    models = [m.model_key for m in pool.models if m.model_key in geometry]
    for model_key in models:
        entry: dict[str, Any] = {"devices": "all"}
        if len(models) > 1:
            entry["device-filter"] = list(_PCI_IDS.get(resolve_gpu_model(product=model_key).key, ()))
        entry["mig-enabled"] = True
        entry["mig-devices"] = {profile: int(count) for profile, count in sorted(geometry[model_key].items())}
        entries.append(entry)
    return {
        "version": "v1",
        "mig-configs": {
            ALL_DISABLED: [{"devices": "all", "mig-enabled": False}],
            name: entries,
        },
    }


def _hami_config(spec: SharingSpec) -> dict[str, Any]:
    p = spec.parameters
    scaling = float(p["memory_scaling"])
    return {
        "nvidia": {
            "resourceCountName": "nvidia.com/gpu",
            "resourceMemoryName": "nvidia.com/gpumem",
            "resourceMemoryPercentageName": "nvidia.com/gpumem-percentage",
            "resourceCoreName": "nvidia.com/gpucores",
            "resourcePriorityName": "nvidia.com/priority",
            "overwriteEnv": False,
            "defaultMemory": 0,
            "defaultCores": 0,
            "defaultGPUNum": 1,
            "deviceSplitCount": int(p["split_count"]),
            "deviceMemoryScaling": int(scaling) if scaling.is_integer() else scaling,
            "deviceCoreScaling": 1,
            "gpuCorePolicy": str(p["core_policy"]),
        }
    }


def render_bundle(*, spec: SharingSpec, pool: PoolSpec, revision: int) -> dict[str, Any]:
    """The bundle of docs/agent-protocol.md: files (written by the agent's ``files`` applier), labels
    and configmaps (applied by its ``gpu-operator`` applier). Assumes ``spec`` passed validation."""
    name = config_name(pool.name, revision)
    files: list[dict[str, str]] = []
    configmaps: list[dict[str, Any]] = []
    labels: dict[str, str] = {}
    mode = spec.mode

    device_plugin = _device_plugin_config(spec, pool)
    if device_plugin is not None:
        text = dump_yaml(device_plugin)
        files.append({"path": "device-plugin/config.yaml", "content": text})
        configmaps.append(
            {"namespace": GPU_OPERATOR_NAMESPACE, "name": DEVICE_PLUGIN_CONFIGMAP, "data": {name: text}}
        )
        labels["nvidia.com/device-plugin.config"] = name
        labels["nvidia.com/gpu.deploy.device-plugin"] = "true"
    else:
        # HAMi brings its own device plugin; under DRA the kubelet plugin of the DRA driver serves.
        labels["nvidia.com/gpu.deploy.device-plugin"] = "false"

    if mode == SharingMode.MIG:
        text = dump_yaml(_mig_parted_config(spec, pool, name))
        files.append({"path": "mig-parted/config.yaml", "content": text})
        configmaps.append(
            {"namespace": GPU_OPERATOR_NAMESPACE, "name": MIG_PARTED_CONFIGMAP, "data": {name: text}}
        )
        labels["nvidia.com/mig.config"] = name
    elif not pool.driver_managed_mig:
        # Every other mode needs MIG off: mig-manager's default config has all-disabled. Not where the
        # DRA driver owns MIG (DynamicMIG): mig-manager would delete the partitions it made.
        labels["nvidia.com/mig.config"] = ALL_DISABLED

    if mode == SharingMode.HAMI:
        text = dump_yaml(_hami_config(spec))
        files.append({"path": "hami/device-config.yaml", "content": text})
        configmaps.append(
            {"namespace": "kube-system", "name": HAMI_CONFIGMAP, "data": {"device-config.yaml": text}}
        )
        labels["gpu"] = "on"  # HAMi's device plugin DaemonSet selects nodes by gpu=on

    files.sort(key=lambda f: f["path"])
    configmaps.sort(key=lambda c: (c["namespace"], c["name"]))
    return {"files": files, "labels": dict(sorted(labels.items())), "configmaps": configmaps}


def mig_management_parts(bundle: dict[str, Any]) -> list[str]:
    """What in a rendered bundle would drive mig-parted: GPU Operator's MIG label, a mig-parted config
    file or its ConfigMap. None of it may reach a node whose MIG the DRA driver owns."""
    parts = [
        f"label {key}={value}"
        for key, value in sorted((bundle.get("labels") or {}).items())
        if key.startswith("nvidia.com/mig.config")
    ]
    parts += [
        f"file {f.get('path')}"
        for f in bundle.get("files") or []
        if str(f.get("path", "")).startswith("mig-parted/")
    ]
    parts += [
        f"ConfigMap {c.get('namespace')}/{c.get('name')}"
        for c in bundle.get("configmaps") or []
        if c.get("name") == MIG_PARTED_CONFIGMAP
    ]
    return parts
