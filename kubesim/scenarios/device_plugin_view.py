"""What the NVIDIA device plugin and GFD publish for a node: extended resources and GPU labels.

One function, `render_gpu_state`, turns hardware facts (model, GPU count, MIG layout) plus the device
plugin config (MIG strategy, time-slicing/MPS replicas, renameByDefault) into the labels and resources a real
node shows. Scenarios use it to build nodes and the mig-manager/device-plugin controllers use it to
rewrite them, so both always agree.

Behaviour reproduced from realworld/node-capacity-samples.yaml and device-plugin-configs.yaml:
- sharing multiplies the advertised count by `replicas`; GFD writes `gpu.replicas`, the sharing
  strategy, and suffixes the product with `-SHARED` unless the resource is renamed;
- `renameByDefault: true` advertises `<name>.shared` and leaves `nvidia.com/gpu` at 0;
- MIG `single` counts MIG devices as `nvidia.com/gpu` and rewrites the product to `<product>-MIG-<profile>`;
- MIG `mixed` advertises `nvidia.com/mig-<profile>` with per-profile `mig-<profile>.*` labels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from kubesim.scenarios.gpu_models import GpuModel, MigProfile
from kubesim.scenarios.mig_geometry import PlacedInstance

GPU = "nvidia.com/gpu"
GPU_SHARED = "nvidia.com/gpu.shared"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"


@dataclass(frozen=True)
class SharingConfig:
    """The parts of a device plugin config (api/config/v1) that change what a node advertises."""

    strategy: str = "none"  # none | time-slicing | mps
    replicas: tuple[tuple[str, int], ...] = ()  # resource name -> replicas
    rename_by_default: bool = False
    mig_strategy: str | None = None  # flags.migStrategy; None keeps the node's label
    # What the plugin logs it ignores (DisableResourceNamingInConfig), one line per ignored feature.
    ignored: tuple[str, ...] = ()

    def replicas_for(self, resource: str) -> int:
        return dict(self.replicas).get(resource, 1)

    def advertised_name(self, resource: str) -> str:
        if self.rename_by_default and self.replicas_for(resource) > 1:
            return f"{resource}.shared"
        return resource


def parse_device_plugin_config(text: str) -> SharingConfig | None:
    """Parse one device plugin config file (YAML or JSON); None when it is not a valid v1 config.

    Mirrors the plugin's rules in replicas.go: `resources` must be non-empty, each resource needs a
    name and replicas >= 2. Unknown keys (like `memoryGB`) are ignored, as the plugin does.

    Resource naming is switched off in every released plugin (api/config/v1/config.go
    DisableResourceNamingInConfig, called unconditionally at start): the top-level `resources`
    (gpus/mig patterns -> names) is dropped, a sharing resource's `rename` is reset (to nothing, or to
    `<name>.shared` under renameByDefault) and `devices` to all. The advertised names are therefore only
    `nvidia.com/gpu`, `nvidia.com/gpu.shared` and `nvidia.com/mig-<profile>`; `ignored` carries the
    warnings the plugin logs.
    """
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    if not isinstance(doc, dict) or doc.get("version") != "v1":
        return None
    flags = doc.get("flags") or {}
    mig_strategy = flags.get("migStrategy") if isinstance(flags, dict) else None
    ignored: list[str] = []
    named = doc.get("resources")
    if isinstance(named, dict) and (named.get("gpus") or named.get("mig")):
        ignored.append("Customizing the 'resources' field is not yet supported in the config. Ignoring...")
    sharing = doc.get("sharing") or {}
    if not isinstance(sharing, dict):
        return None
    for strategy, key in (("time-slicing", "timeSlicing"), ("mps", "mps")):
        section = sharing.get(key)
        if not section:
            continue
        resources = section.get("resources") if isinstance(section, dict) else None
        if not resources or not isinstance(resources, list):
            return None
        replicas: list[tuple[str, int]] = []
        by_default = bool(section.get("renameByDefault", False))
        renamed = devices = False
        for resource in resources:
            name = resource.get("name") if isinstance(resource, dict) else None
            count = resource.get("replicas") if isinstance(resource, dict) else None
            if not isinstance(name, str) or not isinstance(count, int) or count < 2:
                return None
            replicas.append((name, count))
            rename = resource.get("rename")
            renamed = renamed or bool(rename and rename != (f"{name}.shared" if by_default else ""))
            devices = devices or resource.get("devices") not in (None, "all")
        if renamed:
            ignored.append(
                f"Setting the 'rename' field in sharing.{key}.resources is not yet supported in the config. "
                "Ignoring..."
            )
        if devices:
            ignored.append(
                f"Customizing the 'devices' field in sharing.{key}.resources is not yet supported in the "
                "config. Ignoring..."
            )
        return SharingConfig(
            strategy=strategy,
            replicas=tuple(replicas),
            rename_by_default=by_default,
            mig_strategy=mig_strategy,
            ignored=tuple(ignored),
        )
    return SharingConfig(mig_strategy=mig_strategy, ignored=tuple(ignored))


# Config keys as published in realworld/device-plugin-configs.yaml, ready to use without parsing.
DEVICE_PLUGIN_CONFIG_TEXT: dict[str, str] = {
    "any": "version: v1\nflags:\n  migStrategy: none\nsharing:\n  timeSlicing:\n    resources:\n"
    "    - name: nvidia.com/gpu\n      replicas: 4\n",
    "tesla-t4": "version: v1\nflags:\n  migStrategy: none\nsharing:\n  timeSlicing:\n    resources:\n"
    "    - name: nvidia.com/gpu\n      replicas: 4\n",
    "a100-40gb": "version: v1\nflags:\n  migStrategy: mixed\nsharing:\n  timeSlicing:\n    resources:\n"
    "    - name: nvidia.com/gpu\n      replicas: 8\n    - name: nvidia.com/mig-1g.5gb\n      replicas: 2\n"
    "    - name: nvidia.com/mig-2g.10gb\n      replicas: 2\n"
    "    - name: nvidia.com/mig-3g.20gb\n      replicas: 3\n"
    "    - name: nvidia.com/mig-7g.40gb\n      replicas: 7\n",
    "l40s": "version: v1\nflags:\n  migStrategy: none\nsharing:\n  timeSlicing:\n    resources:\n"
    "    - name: nvidia.com/gpu\n      replicas: 2\n",
    "slice-4": "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n"
    "    failRequestsGreaterThanOne: true\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n",
    "mps-any": "version: v1\nsharing:\n  mps:\n    resources:\n"
    "    - name: nvidia.com/gpu\n      replicas: 4\n",
    "mps-four": "version: v1\nsharing:\n  mps:\n    renameByDefault: false\n    resources:\n"
    "    - name: nvidia.com/gpu\n      replicas: 4\n",
    "mps-two": "version: v1\nsharing:\n  mps:\n    renameByDefault: false\n    resources:\n"
    "    - name: nvidia.com/gpu\n      replicas: 2\n",
    "mixed": "version: v1\nflags:\n  migStrategy: mixed\n",
    "single": "version: v1\nflags:\n  migStrategy: single\n",
}

DEVICE_PLUGIN_CONFIGS: dict[str, SharingConfig] = {
    key: config
    for key, text in DEVICE_PLUGIN_CONFIG_TEXT.items()
    if (config := parse_device_plugin_config(text)) is not None
}


@dataclass
class GpuState:
    """GFD labels and device plugin resources for one node."""

    labels: dict[str, str] = field(default_factory=dict)
    resources: dict[str, int] = field(default_factory=dict)


def _mig_profile_labels(prefix: str, profile: MigProfile) -> dict[str, str]:
    return {
        f"{prefix}.engines.copy": str(profile.copy_engines),
        f"{prefix}.engines.decoder": str(profile.decoders),
        f"{prefix}.engines.encoder": str(profile.encoders),
        f"{prefix}.engines.jpeg": str(profile.jpeg_engines),
        f"{prefix}.engines.ofa": str(profile.ofa_engines),
        f"{prefix}.memory": str(profile.memory_mib),
        f"{prefix}.multiprocessors": str(profile.multiprocessors),
        f"{prefix}.slices.ci": str(profile.compute_slices),
        f"{prefix}.slices.gi": str(profile.compute_slices),
    }


def render_gpu_state(
    model: GpuModel,
    gpu_count: int,
    layout: list[list[PlacedInstance]],
    mig_strategy: str,
    sharing: SharingConfig,
) -> GpuState:
    """Labels and resources the device plugin + GFD publish for this hardware and config.

    `mig_strategy` is the effective strategy (none | single | mixed). A layout that the strategy cannot
    express (single with mixed profiles, or with some GPUs not partitioned) advertises nothing, which
    is what the real plugin does when it fails to start.
    """
    state = GpuState()
    labels = state.labels
    labels["nvidia.com/gpu.present"] = "true"
    labels["nvidia.com/gpu.family"] = model.family
    labels["nvidia.com/gpu.compute.major"] = str(model.compute_major)
    labels["nvidia.com/gpu.compute.minor"] = str(model.compute_minor)
    labels["nvidia.com/gpu.machine"] = model.machine
    labels["nvidia.com/mig.capable"] = "true" if model.mig_capable else "false"
    labels["nvidia.com/mps.capable"] = "true" if sharing.strategy == "mps" else "false"
    if model.mig_capable:
        labels["nvidia.com/mig.strategy"] = mig_strategy if mig_strategy != "none" else "single"

    whole = [i for i, gpu in enumerate(layout) if not gpu]
    partitioned = [gpu for gpu in layout if gpu]
    shared = sharing.strategy != "none"
    strategy_label = sharing.strategy if shared else "none"

    if partitioned and mig_strategy == "single":
        names = {inst.profile.name for gpu in partitioned for inst in gpu}
        if len(names) != 1 or whole:
            labels.update(_base_labels(model, gpu_count, 1, "none", suffix=""))
            state.resources[GPU] = 0
            return state
        profile = partitioned[0][0].profile
        devices = sum(len(gpu) for gpu in partitioned)
        replicas = sharing.replicas_for(GPU)
        name = sharing.advertised_name(GPU)
        suffix = f"-MIG-{profile.name}" + ("-SHARED" if replicas > 1 and name == GPU else "")
        labels.update(
            _base_labels(model, devices, replicas, strategy_label if replicas > 1 else "none", suffix)
        )
        # Under `single` GFD describes the MIG device as if it were the GPU (A100 sample: memory 4864).
        labels.update(_mig_profile_labels("nvidia.com/gpu", profile))
        state.resources[name] = devices * replicas
        if name != GPU:
            state.resources[GPU] = 0
        return state

    # No MIG, MIG disabled everywhere, or mixed strategy: whole GPUs advertise as nvidia.com/gpu.
    replicas = sharing.replicas_for(GPU)
    name = sharing.advertised_name(GPU)
    suffix = "-SHARED" if replicas > 1 and name == GPU else ""
    if partitioned:
        # GFD on a mixed node reports replicas 0 for the (absent) whole-GPU resource, as captured.
        labels.update(_base_labels(model, gpu_count, replicas if whole else 0, strategy_label, suffix))
    else:
        labels.update(
            _base_labels(model, gpu_count, replicas, strategy_label if replicas > 1 else "none", suffix)
        )
    state.resources[name] = len(whole) * replicas
    if name != GPU:
        state.resources[GPU] = 0
    if partitioned and mig_strategy == "mixed":
        counts: dict[str, int] = {}
        profiles: dict[str, MigProfile] = {}
        for gpu in partitioned:
            for inst in gpu:
                counts[inst.profile.name] = counts.get(inst.profile.name, 0) + 1
                profiles[inst.profile.name] = inst.profile
        for profile_name in sorted(counts):
            profile = profiles[profile_name]
            resource = f"{MIG_RESOURCE_PREFIX}{profile_name}"
            mig_replicas = sharing.replicas_for(resource)
            prefix = f"nvidia.com/mig-{profile_name}"
            labels[f"{prefix}.count"] = str(counts[profile_name])
            labels.update(_mig_profile_labels(prefix, profile))
            labels[f"{prefix}.product"] = f"{model.product}-MIG-{profile_name}" + (
                "-SHARED" if mig_replicas > 1 else ""
            )
            labels[f"{prefix}.replicas"] = str(mig_replicas)
            labels[f"{prefix}.sharing-strategy"] = sharing.strategy if mig_replicas > 1 else "none"
            state.resources[sharing.advertised_name(resource)] = counts[profile_name] * mig_replicas
    # With MIG enabled and strategy none, the plugin exposes nothing for the partitioned GPUs.
    return state


def _base_labels(model: GpuModel, count: int, replicas: int, strategy: str, suffix: str) -> dict[str, str]:
    return {
        "nvidia.com/gpu.product": model.product + suffix,
        "nvidia.com/gpu.count": str(count),
        "nvidia.com/gpu.memory": str(model.memory_mib),
        "nvidia.com/gpu.replicas": str(replicas),
        "nvidia.com/gpu.sharing-strategy": strategy,
    }


# Label keys GFD owns: a rewrite removes those it no longer publishes.
GFD_LABEL_PREFIXES = ("nvidia.com/gpu.", "nvidia.com/mig-")
GFD_OWNED_EXACT = ("nvidia.com/mig.capable", "nvidia.com/mps.capable", "nvidia.com/mig.strategy")
# Labels written by the operator or users, never by GFD.
NOT_GFD = ("nvidia.com/gpu.deploy.", "nvidia.com/gpu.present")


def label_patch(current: dict[str, Any], desired: dict[str, str]) -> dict[str, str | None]:
    """A merge-patch for metadata.labels: set `desired`, drop GFD labels that are no longer published."""
    patch: dict[str, str | None] = {}
    for key, value in desired.items():
        if current.get(key) != value:
            patch[key] = value
    for key in current:
        if key in desired or key.startswith(NOT_GFD):
            continue
        if key.startswith(GFD_LABEL_PREFIXES) or key in GFD_OWNED_EXACT:
            patch[key] = None
    return patch
