"""Re-rendering a GPU node after its MIG geometry or device plugin config changed.

Both the mig-manager and the device plugin end the same way on a real node: GFD relabels it and the
kubelet reports new extended resources. Resources that disappear stay in capacity at "0", as the
kubelet keeps every extended resource a plugin once registered.
"""

from __future__ import annotations

from typing import Any

from kubesim.controllers.base import Context
from kubesim.controllers.cache import Cache
from kubesim.scenarios.cluster_objects import (
    DEVICE_PLUGIN_CONFIGMAP,
    GPU_OPERATOR_NAMESPACE,
    MIG_PARTED_CONFIGMAP,
)
from kubesim.scenarios.device_plugin_view import (
    DEVICE_PLUGIN_CONFIGS,
    SharingConfig,
    label_patch,
    parse_device_plugin_config,
    render_gpu_state,
)
from kubesim.scenarios.gpu_models import MODELS, GpuModel
from kubesim.scenarios.hami import HAMI_RESOURCES
from kubesim.scenarios.mig_geometry import (
    MIG_PARTED_CONFIGS,
    MigConfigEntry,
    PlacedInstance,
    parse_mig_parted_config,
    resolve_entries,
)
from kubesim.scenarios.nodes import DP_APPLIED, HW_COUNT, HW_MODEL, MIG_APPLIED


def hardware(node: dict[str, Any]) -> tuple[GpuModel, int] | None:
    annotations = node["metadata"].get("annotations") or {}
    model = MODELS.get(annotations.get(HW_MODEL, ""))
    if model is None:
        return None
    return model, int(annotations.get(HW_COUNT, "0"))


def managed_by_device_plugin(node: dict[str, Any]) -> bool:
    return (node["metadata"].get("labels") or {}).get("nvidia.com/gpu.deploy.device-plugin") == "true"


def mig_configs(cache: Cache) -> dict[str, tuple[MigConfigEntry, ...]]:
    """The operator's mig-parted ConfigMap when present (the platform may rewrite it), else the builtins."""
    configmap = cache.get("configmaps", GPU_OPERATOR_NAMESPACE, MIG_PARTED_CONFIGMAP)
    text = ((configmap or {}).get("data") or {}).get("config.yaml")
    if text:
        try:
            return parse_mig_parted_config(text)
        except (ValueError, TypeError, AttributeError):
            return {}
    return dict(MIG_PARTED_CONFIGS)


def device_plugin_config(cache: Cache, key: str | None) -> SharingConfig | None:
    if not key:
        return SharingConfig()
    configmap = cache.get("configmaps", GPU_OPERATOR_NAMESPACE, DEVICE_PLUGIN_CONFIGMAP)
    text = ((configmap or {}).get("data") or {}).get(key)
    if text is not None:
        return parse_device_plugin_config(text)
    if configmap is None:
        return DEVICE_PLUGIN_CONFIGS.get(key)
    return None


def current_layout(
    cache: Cache, node: dict[str, Any], model: GpuModel, gpus: int
) -> list[list[PlacedInstance]]:
    applied = (node["metadata"].get("annotations") or {}).get(MIG_APPLIED, "all-disabled")
    entries = mig_configs(cache).get(applied)
    layout = resolve_entries(entries, model, gpus) if entries and model.mig_capable else None
    return layout if layout is not None else [[] for _ in range(gpus)]


def effective_mig_strategy(node: dict[str, Any], sharing: SharingConfig, model: GpuModel) -> str:
    if sharing.mig_strategy:
        return sharing.mig_strategy
    label = (node["metadata"].get("labels") or {}).get("nvidia.com/mig.strategy")
    return label or ("single" if model.mig_capable else "none")


def rewrite_node(
    ctx: Context,
    node: dict[str, Any],
    layout: list[list[PlacedInstance]],
    *,
    extra_labels: dict[str, str | None],
    extra_annotations: dict[str, str | None],
    sharing: SharingConfig | None = None,
) -> dict[str, Any] | None:
    """Labels and (for device-plugin nodes) capacity for `layout` under the node's device plugin config."""
    hw = hardware(node)
    if hw is None:
        return None
    model, gpus = hw
    annotations = node["metadata"].get("annotations") or {}
    if sharing is None:
        sharing = device_plugin_config(ctx.cache, annotations.get(DP_APPLIED)) or SharingConfig()
    strategy = effective_mig_strategy(node, sharing, model)
    state = render_gpu_state(model, gpus, layout, strategy, sharing)
    labels: dict[str, str | None] = dict(label_patch(node["metadata"].get("labels") or {}, state.labels))
    labels.update(extra_labels)
    name = node["metadata"]["name"]
    updated = ctx.patch(
        "nodes", None, name, {"metadata": {"labels": labels, "annotations": extra_annotations}}
    )
    if updated is None or not managed_by_device_plugin(node):
        return updated
    status = node.get("status") or {}
    capacity: dict[str, str] = {}
    for resource in status.get("capacity") or {}:
        if resource.startswith("nvidia.com/") and resource not in HAMI_RESOURCES:
            capacity[resource] = "0"
    for resource, count in state.resources.items():
        capacity[resource] = str(count)
    return ctx.patch(
        "nodes",
        None,
        name,
        {"status": {"capacity": capacity, "allocatable": dict(capacity)}},
        subresource="status",
    )
