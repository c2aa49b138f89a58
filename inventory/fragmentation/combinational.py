"""Combinational fragmentation (seed, MIG chapter): free slices on a card that cannot form any
profile in demand, even though the free memory "looks" sufficient.

Per card, the usable part of the free capacity is the best packing of demanded profiles into it:
idle instances of a demanded profile are usable as they are; the unpartitioned region (plus idle
instances, on a reconfigurable card) is packed by exhaustive search over placements (8 slots: tiny,
and cached per distinct geometry). Whatever the best packing leaves is stranded.

Quantities are native (compute and memory slices) plus GE = max(compute/C, memory/M) of those slices.
With no demand nothing is stranded: idle capacity is not fragmentation.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

from inventory.domain.gpu_equivalent import WHOLE_GPU_GE, mig_ge
from inventory.domain.gpu_models import GpuModel
from inventory.domain.issues import ParseIssue
from inventory.fragmentation.geometry import GpuGeometry, Occupancy, occupancy_of

__all__ = [
    "WHOLE_GPU",
    "FragmentationTotals",
    "GpuFragmentation",
    "NodeFragmentation",
    "PoolFragmentation",
    "analyze_gpu_fragmentation",
    "analyze_node_fragmentation",
    "analyze_pool_fragmentation",
]

WHOLE_GPU = "whole"  # a demand for a whole card with MIG disabled (plain nvidia.com/gpu)


@dataclass(frozen=True, slots=True)
class GpuFragmentation:
    gpu_id: str
    model_key: str
    free_compute_slices: int
    free_memory_slices: int
    free_ge: Fraction
    usable_ge: Fraction
    stranded_compute_slices: int
    stranded_memory_slices: int
    stranded_ge: Fraction
    best_packing: tuple[tuple[str, int], ...]  # (profile, start) of the packing found, new instances only
    issues: tuple[ParseIssue, ...] = ()


@dataclass(slots=True)
class FragmentationTotals:
    free_ge: Fraction = Fraction(0)
    usable_ge: Fraction = Fraction(0)
    stranded_ge: Fraction = Fraction(0)

    def add(self, gpu: GpuFragmentation) -> None:
        self.free_ge += gpu.free_ge
        self.usable_ge += gpu.usable_ge
        self.stranded_ge += gpu.stranded_ge


@dataclass(frozen=True, slots=True)
class NodeFragmentation:
    node_name: str
    gpus: tuple[GpuFragmentation, ...]
    by_model: Mapping[str, FragmentationTotals]  # GE only adds up within one GPU model


@dataclass(frozen=True, slots=True)
class PoolFragmentation:
    pool_name: str
    node_count: int
    gpu_count: int
    by_model: Mapping[str, FragmentationTotals]
    stranded_gpu_count: int  # cards with any stranded capacity
    nodes: tuple[NodeFragmentation, ...] = field(repr=False, default=())


def _slices_ge(model: GpuModel, compute: int, memory: int) -> Fraction:
    if not model.mig_capable:
        return Fraction(0)
    return mig_ge(
        compute_slices=compute,
        memory_slices=memory,
        card_compute_slices=model.mig_compute_slices,
        card_memory_slices=model.mig_memory_slices,
    )


def analyze_gpu_fragmentation(*, gpu: GpuGeometry, demand: Iterable[str]) -> GpuFragmentation:
    """Stranded capacity on one card for the demanded profile names (WHOLE_GPU for a whole card)."""
    wanted = frozenset(demand)
    model = gpu.model
    if not model.mig_capable or not gpu.mig_enabled:
        free = Fraction(0) if gpu.in_use else WHOLE_GPU_GE
        usable = free if (not wanted or WHOLE_GPU in wanted) else Fraction(0)
        return GpuFragmentation(gpu.gpu_id, model.key, 0, 0, free, usable, 0, 0, free - usable, ())
    busy, issues = occupancy_of(model=model, instances=[i for i in gpu.instances if i.in_use])
    idle = [i for i in gpu.instances if not i.in_use]
    if gpu.reconfigurable:
        region, ready = busy, []
    else:
        region, issues = occupancy_of(model=model, instances=gpu.instances)  # reports busy ones too
        ready = idle
    free_compute = model.mig_compute_slices - busy.compute_used
    free_memory = model.mig_memory_slices - busy.memory_mask.bit_count()
    used_compute = used_memory = 0
    for instance in ready:  # idle instances usable as they are when their profile is in demand
        profile = model.mig_profile(instance.profile)
        if profile is not None and instance.profile in wanted:
            used_compute += profile.compute_slices
            used_memory += profile.memory_slices
    packing: tuple[tuple[str, int], ...] = ()
    if wanted:
        packed_compute, packed_memory, packing = _best_packing(model, region, wanted)
        used_compute += packed_compute
        used_memory += packed_memory
    else:  # no demand: nothing is stranded
        used_compute, used_memory = free_compute, free_memory
    stranded_compute, stranded_memory = free_compute - used_compute, free_memory - used_memory
    free_ge = _slices_ge(model, free_compute, free_memory)
    stranded_ge = _slices_ge(model, stranded_compute, stranded_memory)
    # usable = free - stranded rather than the GE of the packed slices: dominant shares do not add up
    # (1 compute + 2 memory slices is 1/4, plus 1 stranded compute slice 1/7, is more than the 2/7 free),
    # and pool dashboards need free = usable + stranded to reconcile.
    return GpuFragmentation(
        gpu_id=gpu.gpu_id,
        model_key=model.key,
        free_compute_slices=free_compute,
        free_memory_slices=free_memory,
        free_ge=free_ge,
        usable_ge=free_ge - stranded_ge,
        stranded_compute_slices=stranded_compute,
        stranded_memory_slices=stranded_memory,
        stranded_ge=stranded_ge,
        best_packing=packing,
        issues=issues,
    )


@lru_cache(maxsize=65536)
def _best_packing(
    model: GpuModel, occupancy: Occupancy, wanted: frozenset[str]
) -> tuple[int, int, tuple[tuple[str, int], ...]]:
    """Most compute slices (then memory slices) coverable by new instances of wanted profiles.

    Compute first: it is the dimension with fewer slices (7 vs 8), so it strands first.
    """
    profiles = [p for p in model.mig_profiles if p.name in wanted]
    counts = dict(occupancy.profile_counts)
    best: list[tuple[int, int, tuple[tuple[str, int], ...]]] = [(0, 0, ())]

    def search(
        mask: int, compute: int, min_start: int, chosen: tuple[tuple[str, int], ...], gain: tuple[int, int]
    ) -> None:
        if gain > best[0][:2]:
            best[0] = (gain[0], gain[1], chosen)
        for profile in profiles:
            if compute + profile.compute_slices > model.mig_compute_slices:
                continue
            if (
                counts.get(profile.name, 0) + sum(1 for name, _ in chosen if name == profile.name)
                >= profile.max_instances
            ):
                continue
            for placement in profile.placements:
                # Placements are explored in start order so each set of instances is visited once.
                if placement.start < min_start or mask & placement.mask:
                    continue
                search(
                    mask | placement.mask,
                    compute + profile.compute_slices,
                    placement.start,
                    (*chosen, (profile.name, placement.start)),
                    (gain[0] + profile.compute_slices, gain[1] + profile.memory_slices),
                )

    search(occupancy.memory_mask, occupancy.compute_used, 0, (), (0, 0))
    return best[0]


def analyze_node_fragmentation(
    *, node_name: str, gpus: Sequence[GpuGeometry], demand: Iterable[str]
) -> NodeFragmentation:
    wanted = frozenset(demand)
    reports = tuple(analyze_gpu_fragmentation(gpu=gpu, demand=wanted) for gpu in gpus)
    by_model: dict[str, FragmentationTotals] = defaultdict(FragmentationTotals)
    for report in reports:
        by_model[report.model_key].add(report)
    return NodeFragmentation(node_name, reports, dict(by_model))


def analyze_pool_fragmentation(
    *,
    pool_name: str,
    nodes: Mapping[str, Sequence[GpuGeometry]],
    demand: Iterable[str],
    keep_nodes: bool = False,
) -> PoolFragmentation:
    """Stranded capacity of a node pool against the profiles its pending workloads ask for."""
    wanted = frozenset(demand)
    by_model: dict[str, FragmentationTotals] = defaultdict(FragmentationTotals)
    node_reports = []
    gpu_count = stranded_gpus = 0
    for node_name, gpus in nodes.items():
        report = analyze_node_fragmentation(node_name=node_name, gpus=gpus, demand=wanted)
        for gpu in report.gpus:
            by_model[gpu.model_key].add(gpu)
            gpu_count += 1
            stranded_gpus += gpu.stranded_ge > 0
        if keep_nodes:
            node_reports.append(report)
    return PoolFragmentation(
        pool_name, len(nodes), gpu_count, dict(by_model), stranded_gpus, tuple(node_reports)
    )
