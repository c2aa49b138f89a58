"""MIG geometries: mig-parted configs and the placement rules a geometry must satisfy.

A node selects a named config with the `nvidia.com/mig.config` label. A config is a list of entries;
each entry picks GPUs (all, or indices, optionally filtered by PCI device id) and says which profiles
to create on each of them. mig-manager refuses a config whose profiles cannot be placed on a GPU:
placements must not overlap on the 8-slot memory axis, compute slices must not exceed 7, and each
profile may only start where `nvidia-smi mig -lgipp` allows.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from kubesim.scenarios.gpu_models import MIG_COMPUTE_SLICES, MIG_MEMORY_SLOTS, GpuModel, MigProfile


@dataclass(frozen=True)
class MigConfigEntry:
    """One entry of a mig-parted config: which GPUs, and what to create on each."""

    devices: str | tuple[int, ...]  # "all" or GPU indices
    mig_enabled: bool
    mig_devices: tuple[tuple[str, int], ...] = ()  # (profile, count) pairs, in config order
    device_filter: tuple[str, ...] = ()  # PCI "0xDDDDVVVV" ids; empty matches every GPU


@dataclass(frozen=True)
class PlacedInstance:
    """A MIG device as created on one GPU: its profile and where it sits on the memory axis."""

    profile: MigProfile
    start: int


def _all(*pairs: tuple[str, int], device_filter: tuple[str, ...] = ()) -> MigConfigEntry:
    return MigConfigEntry(devices="all", mig_enabled=True, mig_devices=pairs, device_filter=device_filter)


_DISABLED = MigConfigEntry(devices="all", mig_enabled=False)
_H100_80GB_FAMILY = (
    "0x233010DE",
    "0x233110DE",
    "0x232210DE",
    "0x20B210DE",
    "0x20B510DE",
    "0x20F310DE",
    "0x20F510DE",
    "0x232410DE",
)
_A100_40GB_FAMILY = ("0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE")
_H200_FAMILY = ("0x233510DE", "0x233B10DE")

# The configs of NVIDIA/mig-parted config-default.yaml that apply to the models kubesim ships, plus the
# custom configs seen in realworld/mig-parted-configs.yaml. Device filters are kept so that a config
# naming profiles of another family resolves to nothing for this GPU, as mig-parted does.
MIG_PARTED_CONFIGS: dict[str, tuple[MigConfigEntry, ...]] = {
    "all-disabled": (_DISABLED,),
    "all-1g.5gb": (_all(("1g.5gb", 7)),),
    "all-1g.5gb.me": (_all(("1g.5gb+me", 1)),),
    "all-2g.10gb": (_all(("2g.10gb", 3)),),
    "all-3g.20gb": (_all(("3g.20gb", 2)),),
    "all-4g.20gb": (_all(("4g.20gb", 1)),),
    "all-7g.40gb": (_all(("7g.40gb", 1)),),
    "all-1g.10gb": (
        _all(("1g.10gb", 7), device_filter=_H100_80GB_FAMILY),
        _all(("1g.10gb", 4), device_filter=_A100_40GB_FAMILY),
    ),
    "all-1g.10gb.me": (_all(("1g.10gb+me", 1)),),
    "all-1g.20gb": (_all(("1g.20gb", 4)),),
    "all-2g.20gb": (_all(("2g.20gb", 3)),),
    "all-3g.40gb": (_all(("3g.40gb", 2)),),
    "all-4g.40gb": (_all(("4g.40gb", 1)),),
    "all-7g.80gb": (_all(("7g.80gb", 1)),),
    "all-1g.18gb": (_all(("1g.18gb", 7)),),
    "all-1g.18gb.me": (_all(("1g.18gb+me", 1)),),
    "all-1g.35gb": (_all(("1g.35gb", 4)),),
    "all-2g.35gb": (_all(("2g.35gb", 3)),),
    "all-3g.71gb": (_all(("3g.71gb", 2)),),
    "all-4g.71gb": (_all(("4g.71gb", 1)),),
    "all-7g.141gb": (_all(("7g.141gb", 1)),),
    "all-balanced": (
        _all(("1g.18gb", 2), ("2g.35gb", 1), ("3g.71gb", 1), device_filter=_H200_FAMILY),
        _all(("1g.10gb", 2), ("2g.20gb", 1), ("3g.40gb", 1), device_filter=_H100_80GB_FAMILY),
        _all(("1g.5gb", 2), ("2g.10gb", 1), ("3g.20gb", 1), device_filter=_A100_40GB_FAMILY),
    ),
    # NVIDIA/cloud-native-docs custom-mig-config.yaml
    "five-1g-one-2g": (_all(("1g.10gb", 5), ("2g.20gb", 1)),),
    # NVIDIA/k8s-dra-driver quickstart (8x A100-40GB, half partitioned)
    "half-balanced": (
        MigConfigEntry(
            devices=(0, 1, 2, 3),
            mig_enabled=True,
            mig_devices=(("1g.5gb", 2), ("2g.10gb", 1), ("3g.20gb", 1)),
        ),
        MigConfigEntry(devices=(4, 5, 6, 7), mig_enabled=False),
    ),
    # NVIDIA/gpu-operator#1602 (8-GPU 80GB node)
    "2g-2g-2g-1g-and-4g-3g": (
        MigConfigEntry(devices=(0,), mig_enabled=True, mig_devices=(("2g.20gb", 3), ("1g.10gb", 1))),
        MigConfigEntry(devices=(1,), mig_enabled=True, mig_devices=(("4g.40gb", 1), ("3g.40gb", 1))),
        MigConfigEntry(devices=(2, 3, 4, 5, 6, 7), mig_enabled=False),
    ),
}


def place_profiles(model: GpuModel, wanted: list[str]) -> list[PlacedInstance] | None:
    """Placements for `wanted` profiles on one GPU of `model`, or None when they cannot coexist.

    Backtracking over lgipp starts, biggest profiles first: the search space is tiny (at most seven
    instances on eight slots), and a greedy first-fit would wrongly refuse all-balanced (3g must go to
    start 4 so that the two 1g instances still find slots below slot 7).
    """
    profiles: list[MigProfile] = []
    for name in wanted:
        profile = model.profile(name)
        if profile is None:
            return None
        profiles.append(profile)
    if sum(p.compute_slices for p in profiles) > MIG_COMPUTE_SLICES:
        return None
    for profile in set(profiles):
        if profiles.count(profile) > profile.max_instances:
            return None
    order = sorted(profiles, key=lambda p: (-p.memory_slots, -p.compute_slices, p.name))
    used = [False] * MIG_MEMORY_SLOTS
    placed: list[PlacedInstance] = []

    def search(i: int) -> bool:
        if i == len(order):
            return True
        profile = order[i]
        for start in profile.starts:
            span = range(start, start + profile.memory_slots)
            if any(used[s] for s in span):
                continue
            for s in span:
                used[s] = True
            placed.append(PlacedInstance(profile, start))
            if search(i + 1):
                return True
            placed.pop()
            for s in span:
                used[s] = False
        return False

    if not search(0):
        return None
    return sorted(placed, key=lambda inst: inst.start)


_RESOLVED: dict[tuple[str, str, int], list[list[PlacedInstance]] | None] = {}


def resolve_mig_config(name: str, model: GpuModel, gpu_count: int) -> list[list[PlacedInstance]] | None:
    """The MIG devices per GPU index that config `name` creates on a node, or None when it cannot apply.

    An empty list for a GPU means MIG disabled on it. None means mig-manager would fail: unknown config,
    a GPU matched by no entry, an index beyond the node's GPUs, or profiles that cannot be placed.
    """
    key = (name, model.key, gpu_count)
    if key not in _RESOLVED:
        entries = MIG_PARTED_CONFIGS.get(name)
        _RESOLVED[key] = None if entries is None else resolve_entries(entries, model, gpu_count)
    cached = _RESOLVED[key]
    # A fresh outer list per caller; the placements themselves are immutable.
    return None if cached is None else [list(gpu) for gpu in cached]


def resolve_entries(
    entries: tuple[MigConfigEntry, ...], model: GpuModel, gpu_count: int
) -> list[list[PlacedInstance]] | None:
    layout: list[list[PlacedInstance] | None] = [None] * gpu_count
    for entry in entries:
        if entry.device_filter and model.pci_device_id not in entry.device_filter:
            continue
        indices = range(gpu_count) if isinstance(entry.devices, str) else entry.devices
        for index in indices:
            if index >= gpu_count:
                return None
            if layout[index] is not None:
                continue  # the first matching entry wins, as in mig-parted
            if not entry.mig_enabled:
                layout[index] = []
                continue
            if not model.mig_capable:
                return None
            wanted = [profile for profile, count in entry.mig_devices for _ in range(count)]
            placed = place_profiles(model, wanted)
            if placed is None:
                return None
            layout[index] = placed
    if any(gpu is None for gpu in layout):
        return None
    return [gpu for gpu in layout if gpu is not None]


def profile_counts(layout: list[list[PlacedInstance]]) -> dict[str, int]:
    """MIG devices per profile name over all GPUs of a layout."""
    counts: dict[str, int] = {}
    for gpu in layout:
        for inst in gpu:
            counts[inst.profile.name] = counts.get(inst.profile.name, 0) + 1
    return counts


def parse_mig_parted_config(text: str) -> dict[str, tuple[MigConfigEntry, ...]]:
    """The `mig-configs` of a mig-parted config file (quoted or bare profile keys, flow or block lists)."""
    doc = yaml.safe_load(text) or {}
    configs: dict[str, tuple[MigConfigEntry, ...]] = {}
    for name, entries in (doc.get("mig-configs") or {}).items():
        parsed = []
        for entry in entries or []:
            devices = entry.get("devices", "all")
            device_filter = entry.get("device-filter") or ()
            if isinstance(device_filter, str):
                device_filter = (device_filter,)
            parsed.append(
                MigConfigEntry(
                    devices="all" if devices == "all" else tuple(int(d) for d in devices),
                    mig_enabled=bool(entry.get("mig-enabled", False)),
                    mig_devices=tuple((str(p), int(n)) for p, n in (entry.get("mig-devices") or {}).items()),
                    device_filter=tuple(str(f) for f in device_filter),
                )
            )
        configs[str(name)] = tuple(parsed)
    return configs
