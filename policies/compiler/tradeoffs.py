"""What each sharing mode trades (the seed's comparison, DESIGN §2) and what it yields on one pool.

The five dimensions the platform team weighs: isolation, interference, utilisation, reconfiguration
cost and how pods ask. The seed's table (chapter "五维对比基线") also names the resource unit and how
hard the mechanism is to run; both are kept beside the five.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from inventory.domain.gpu_models import resolve_gpu_model
from policies.compiler.naming import mig_resource_name, pool_resource_name
from policies.compiler.spec import MigStrategy, PoolSpec, SharingMode, SharingSpec

__all__ = ["DIMENSIONS", "ModeTradeoff", "PoolYield", "YieldLine", "pool_yield", "tradeoff"]


@dataclass(frozen=True, slots=True)
class ModeTradeoff:
    mode: SharingMode
    label: str
    isolation: str
    interference: str
    utilisation: str
    reconfiguration: str
    how_pods_ask: str
    resource_unit: str
    complexity: str

    def as_dict(self) -> dict[str, str]:
        return {
            "mode": str(self.mode),
            "label": self.label,
            "isolation": self.isolation,
            "interference": self.interference,
            "utilisation": self.utilisation,
            "reconfiguration": self.reconfiguration,
            "how_pods_ask": self.how_pods_ask,
            "resource_unit": self.resource_unit,
            "complexity": self.complexity,
        }


DIMENSIONS = ("isolation", "interference", "utilisation", "reconfiguration", "how_pods_ask")

_TRADEOFFS = {
    SharingMode.EXCLUSIVE: ModeTradeoff(
        SharingMode.EXCLUSIVE,
        "Exclusive whole GPU",
        "highest: one pod owns the card",
        "none",
        "low for small jobs: a pod that needs a slice still holds a whole card",
        "low: a device plugin config change, no drain",
        "nvidia.com/gpu: 1 (renamed per pool)",
        "whole card",
        "simplest",
    ),
    SharingMode.MIG: ModeTradeoff(
        SharingMode.MIG,
        "MIG (hardware partitions)",
        "high: separate memory paths, caches and fault domains in hardware",
        "low and predictable",
        "high for mixed sizes, but fixed profiles strand slices (internal and combinational fragmentation)",
        "high: a geometry change needs the node empty of GPU work (cordon and drain)",
        "mixed: nvidia.com/mig-<profile>: 1; single: nvidia.com/gpu counts instances",
        "discrete instances (1g.10gb ... 7g.80gb)",
        "good",
    ),
    SharingMode.TIME_SLICING: ModeTradeoff(
        SharingMode.TIME_SLICING,
        "Time-slicing (oversubscription)",
        "low to medium: no memory or fault isolation between replicas",
        "high: replicas take turns on the whole card, workload-dependent",
        "high for light, bursty work (inference, notebooks)",
        "low: a device plugin config change",
        "nvidia.com/gpu: 1 per replica (renamed per pool)",
        "replicas of a card",
        "medium: needs policy guard rails",
    ),
    SharingMode.MPS: ModeTradeoff(
        SharingMode.MPS,
        "MPS (concurrent processes)",
        "low: one CUDA context server, a fault can take down every client",
        "workload-dependent",
        "high for many small kernels that would not fill the card alone",
        "low: a device plugin config change (the MPS control daemon restarts)",
        "nvidia.com/gpu: 1 per replica (renamed per pool)",
        "replicas with a pinned memory limit each",
        "medium: sensitive to the workload's shape",
    ),
    SharingMode.HAMI: ModeTradeoff(
        SharingMode.HAMI,
        "HAMi soft shares",
        "soft: memory and core quotas enforced in the CUDA library, time-slicing underneath",
        "workload-dependent",
        "high: shares sized in MiB and core percent",
        "low: a ConfigMap change and a device plugin restart",
        "nvidia.com/gpu + nvidia.com/gpumem + nvidia.com/gpucores",
        "memory MiB and core percent",
        "medium: the HAMi scheduler extender and device plugin",
    ),
    SharingMode.DRA: ModeTradeoff(
        SharingMode.DRA,
        "DRA (ResourceClaims)",
        "whatever the driver gives the device",
        "depends on the device allocated",
        "as the driver exposes (whole GPUs, MIG devices, counters)",
        "low for the claims; the driver's own partitioning as the driver does it",
        "a ResourceClaim(Template) on a DeviceClass",
        "devices chosen by CEL selectors",
        "newer: needs Kubernetes 1.34+ and a DRA driver",
    ),
}


def tradeoff(mode: SharingMode) -> ModeTradeoff:
    return _TRADEOFFS[mode]


@dataclass(frozen=True, slots=True)
class YieldLine:
    model_key: str
    cards: int
    resource: str
    per_card: int
    units: int
    ge_each: Fraction
    text: str


@dataclass(frozen=True, slots=True)
class PoolYield:
    lines: tuple[YieldLine, ...]
    summary: str
    needs_empty_nodes: bool
    notes: tuple[str, ...] = ()


def _short(model_key: str) -> str:
    return model_key.split("-")[0]


def pool_yield(*, spec: SharingSpec, pool: PoolSpec) -> PoolYield:
    """What the option gives on this pool: per GPU model the units advertised and their GE, e.g.
    "7 x 1g.10gb per H100 -> 56 shares" on 8 cards. Assumes ``spec`` passed validation."""
    lines: list[YieldLine] = []
    notes: list[str] = []
    p, mode = spec.parameters, spec.mode
    resource = spec.resource_name or pool_resource_name(pool.name)
    for mc in pool.models:
        model = resolve_gpu_model(product=mc.model_key)
        short = _short(model.key)
        if mode == SharingMode.MIG:
            per_card_geometry = (p.get("geometry") or {}).get(mc.model_key) or {}
            for profile_name, count in sorted(per_card_geometry.items()):
                profile = model.mig_profile(profile_name)
                if profile is None:
                    continue
                name = (
                    mig_resource_name(pool.name, profile_name)
                    if p.get("strategy") == MigStrategy.MIXED
                    else resource
                )
                units = int(count) * mc.cards
                lines.append(
                    YieldLine(
                        mc.model_key,
                        mc.cards,
                        name,
                        int(count),
                        units,
                        profile.ge,
                        f"{count} x {profile_name} per {short} -> {units} shares of {profile.ge} GE",
                    )
                )
        elif mode in (SharingMode.TIME_SLICING, SharingMode.MPS):
            replicas = int(p["replicas"])
            units = replicas * mc.cards
            kind = "time-slices" if mode == SharingMode.TIME_SLICING else "MPS replicas"
            lines.append(
                YieldLine(
                    mc.model_key,
                    mc.cards,
                    resource,
                    replicas,
                    units,
                    Fraction(1, replicas),
                    f"{replicas} {kind} per {short} -> {units} shares of 1/{replicas} GE",
                )
            )
        elif mode == SharingMode.HAMI:
            split = int(p["split_count"])
            units = split * mc.cards
            memory = int(model.memory_mib * float(p["memory_scaling"])) if model.memory_mib else 0
            lines.append(
                YieldLine(
                    mc.model_key,
                    mc.cards,
                    "nvidia.com/gpu",
                    split,
                    units,
                    Fraction(0),
                    f"up to {split} tasks per {short} -> {units} slots; {memory} MiB of gpumem per card "
                    f"(scaling {p['memory_scaling']}), shares sized by gpumem and gpucores",
                )
            )
        elif mode == SharingMode.DRA:
            lines.append(
                YieldLine(
                    mc.model_key,
                    mc.cards,
                    "resource.k8s.io/ResourceClaim",
                    1,
                    mc.cards,
                    Fraction(1),
                    f"{mc.cards} {short} devices in ResourceSlices; claims take what the driver gives",
                )
            )
        else:
            lines.append(
                YieldLine(
                    mc.model_key,
                    mc.cards,
                    resource,
                    1,
                    mc.cards,
                    Fraction(1),
                    f"1 pod per {short} -> {mc.cards} whole GPUs",
                )
            )
    if mode == SharingMode.HAMI:
        notes.append(
            "HAMi's resource names are set once per cluster (its scheduler's device config): two HAMi "
            "pools on one cluster share nvidia.com/gpu, gpumem and gpucores in a namespace's ResourceQuota."
        )
    if mode == SharingMode.MPS and p.get("memory_limit_mib"):
        notes.append(
            f"each MPS client is pinned to {p['memory_limit_mib']} MiB at most; the plugin's MPS daemon "
            "divides the card's memory by the replicas"
        )
    total = sum(line.units for line in lines)
    t = tradeoff(mode)
    needs_empty = mode == SharingMode.MIG
    parts = [line.text for line in lines] or [f"no GPUs known in pool {pool.name} yet"]
    summary = "; ".join(parts) + f" ({total} in all); isolation {t.isolation.split(':')[0]}"
    summary += "; needs empty nodes" if needs_empty else "; no drain needed"
    return PoolYield(tuple(lines), summary, needs_empty, tuple(notes))
