"""Cluster fragmentation (seed, MIG chapter): pools with different MIG geometries, so pending demand
waits in one place while free capacity of the wrong shape idles in another.

For each pending demand (profile, count, optionally a GPU model) count how many instances every pool
could hand out now: idle instances of that profile, plus what fits in free slices (or, on
reconfigurable cards, in everything not busy). Demand a pool cannot place is unmet; free GE that no
pending demand can use is unfit. Both non-zero at once is the geometry mismatch to report.
Counts are per profile, independently: when several demanded profiles compete for the same slices
the figures are upper bounds, which is what a "could it fit anywhere" view needs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from inventory.domain.gpu_equivalent import WHOLE_GPU_GE
from inventory.domain.gpu_models import GpuModel
from inventory.fragmentation.combinational import WHOLE_GPU, analyze_gpu_fragmentation
from inventory.fragmentation.geometry import GpuGeometry, Occupancy, occupancy_of

__all__ = ["ClusterFragmentation", "DemandFit", "ProfileDemand", "analyze_cluster_fragmentation"]


@dataclass(frozen=True, slots=True)
class ProfileDemand:
    profile: str  # MIG profile name, or WHOLE_GPU
    count: int
    model_key: str | None = None  # None: any model offering the profile


@dataclass(frozen=True, slots=True)
class DemandFit:
    demand: ProfileDemand
    placeable_by_pool: Mapping[str, int]
    placeable_total: int
    unmet: int
    unmet_ge: Fraction  # by the profile's GE on the first model offering it; 0 if no model does


@dataclass(frozen=True, slots=True)
class ClusterFragmentation:
    demands: tuple[DemandFit, ...]
    free_ge_by_model: Mapping[str, Fraction]
    unfit_free_ge_by_model: Mapping[str, Fraction]  # free, but no pending demand can use it
    unmet_ge_by_model: Mapping[str, Fraction]

    @property
    def geometry_mismatch(self) -> bool:
        """Demand waits while capacity of another shape idles."""
        return any(v > 0 for v in self.unmet_ge_by_model.values()) and any(
            v > 0 for v in self.unfit_free_ge_by_model.values()
        )


def analyze_cluster_fragmentation(
    *, pools: Mapping[str, Sequence[GpuGeometry]], demands: Sequence[ProfileDemand]
) -> ClusterFragmentation:
    fits = []
    unmet_by_model: dict[str, Fraction] = defaultdict(Fraction)
    for demand in demands:
        by_pool = {name: sum(_placeable_count(gpu, demand) for gpu in gpus) for name, gpus in pools.items()}
        total = sum(by_pool.values())
        unmet = max(demand.count - total, 0)
        model_key, ge = _demand_ge(pools, demand)
        fits.append(DemandFit(demand, by_pool, total, unmet, ge * unmet))
        if unmet:
            unmet_by_model[demand.model_key or model_key] += ge * unmet
    free_by_model: dict[str, Fraction] = defaultdict(Fraction)
    unfit_by_model: dict[str, Fraction] = defaultdict(Fraction)
    for gpus in pools.values():
        for gpu in gpus:
            wanted = [d.profile for d in demands if d.model_key in (None, gpu.model.key)]
            report = analyze_gpu_fragmentation(gpu=gpu, demand=wanted)
            free_by_model[gpu.model.key] += report.free_ge
            # With no demand for this model, all its free capacity is unfit for what is pending.
            unfit_by_model[gpu.model.key] += report.stranded_ge if wanted else report.free_ge
    return ClusterFragmentation(tuple(fits), dict(free_by_model), dict(unfit_by_model), dict(unmet_by_model))


def _demand_ge(pools: Mapping[str, Sequence[GpuGeometry]], demand: ProfileDemand) -> tuple[str, Fraction]:
    if demand.profile == WHOLE_GPU:
        return demand.model_key or "", WHOLE_GPU_GE
    for gpus in pools.values():
        for gpu in gpus:
            if demand.model_key in (None, gpu.model.key) and (
                profile := gpu.model.mig_profile(demand.profile)
            ):
                return gpu.model.key, profile.ge
    return demand.model_key or "", Fraction(0)


def _placeable_count(gpu: GpuGeometry, demand: ProfileDemand) -> int:
    if demand.model_key not in (None, gpu.model.key):
        return 0
    if demand.profile == WHOLE_GPU:
        return int(not (gpu.model.mig_capable and gpu.mig_enabled) and not gpu.in_use)
    if not gpu.mig_enabled or gpu.model.mig_profile(demand.profile) is None:
        return 0
    idle_ready = (
        0
        if gpu.reconfigurable
        else sum(1 for i in gpu.instances if not i.in_use and i.profile == demand.profile)
    )
    kept = [i for i in gpu.instances if i.in_use or not gpu.reconfigurable]
    occupancy, _ = occupancy_of(model=gpu.model, instances=kept)
    return idle_ready + _greedy_count(gpu.model, occupancy, demand.profile)


@lru_cache(maxsize=65536)
def _greedy_count(model: GpuModel, occupancy: Occupancy, profile_name: str) -> int:
    """How many new instances of one profile fit. Lowest start first is optimal here: all placements
    of a profile have the same size and aligned starts, so taking the lowest never blocks two others."""
    profile = model.mig_profile(profile_name)
    if profile is None:
        return 0
    mask, compute, count = occupancy.memory_mask, occupancy.compute_used, occupancy.count(profile_name)
    placed = 0
    for placement in profile.placements:
        if (
            count + placed >= profile.max_instances
            or compute + profile.compute_slices > model.mig_compute_slices
        ):
            break
        if not mask & placement.mask:
            mask |= placement.mask
            compute += profile.compute_slices
            placed += 1
    return placed
