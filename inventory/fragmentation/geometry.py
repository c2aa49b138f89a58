"""MIG geometry of one card and what can still be placed on it under the real placement rules.

Rules (mig_profiles.py): an instance occupies `size` memory slices from one of its profile's allowed
starts; instances may not overlap on the memory axis; compute slices may not exceed the card's (7 on
A100/H100); a profile has a per-card maximum (only one "+me"). Occupancy is a bit mask over memory
slices so that checks are integer operations and results can be cached per distinct geometry: a
5,000-node pool has only a handful of distinct ones.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from inventory.domain.gpu_models import GpuModel
from inventory.domain.issues import ParseIssue, error
from inventory.domain.mig_profiles import MigPlacement, MigProfile

__all__ = [
    "GpuGeometry",
    "GpuPlacementReport",
    "Occupancy",
    "PlaceableProfile",
    "PlacedInstance",
    "analyze_gpu_placement",
    "first_fit_layout",
    "occupancy_of",
    "placeable_starts",
]


@dataclass(frozen=True, slots=True)
class PlacedInstance:
    """An existing GPU instance, as `nvidia-smi mig -lgi` shows it (profile, Start of Start:Size)."""

    profile: str
    start: int
    in_use: bool = True  # held by a pod/claim; a free instance can be handed out as-is


@dataclass(frozen=True, slots=True)
class GpuGeometry:
    gpu_id: str
    model: GpuModel
    mig_enabled: bool = True
    instances: tuple[PlacedInstance, ...] = ()
    in_use: bool = False  # for a card with MIG disabled: is the whole card held
    # True where idle instances may be destroyed and re-created in another shape without touching the
    # busy ones (dynamic MIG: HAMi mig mode, DRA DynamicMIG). False for a static mig-parted geometry.
    reconfigurable: bool = False


@dataclass(frozen=True, slots=True)
class Occupancy:
    """Slices taken on one card: a memory-slot bit mask, compute slices, per-profile instance counts."""

    memory_mask: int
    compute_used: int
    profile_counts: tuple[tuple[str, int], ...]  # sorted, hashable for caching

    def count(self, profile: str) -> int:
        return dict(self.profile_counts).get(profile, 0)


def occupancy_of(
    *, model: GpuModel, instances: Iterable[PlacedInstance]
) -> tuple[Occupancy, tuple[ParseIssue, ...]]:
    """Fold instances into an Occupancy; impossible ones (bad start, overlap) are reported and skipped."""
    mask, compute, counts, issues = 0, 0, dict[str, int](), list[ParseIssue]()
    for instance in instances:
        profile = model.mig_profile(instance.profile)
        if profile is None:
            issues.append(error("mig.geometry.unknown_profile", f"{instance.profile} on {model.key}"))
            continue
        placement = MigPlacement(instance.start, profile.memory_slices)
        if instance.start not in profile.placement_starts:
            issues.append(
                error("mig.geometry.bad_start", f"{instance.profile} cannot start at {instance.start}")
            )
            continue
        if mask & placement.mask:
            issues.append(error("mig.geometry.overlap", f"{instance.profile} at {instance.start} overlaps"))
            continue
        mask |= placement.mask
        compute += profile.compute_slices
        counts[profile.name] = counts.get(profile.name, 0) + 1
    return Occupancy(mask, compute, tuple(sorted(counts.items()))), tuple(issues)


def placeable_starts(*, model: GpuModel, occupancy: Occupancy, profile: MigProfile) -> tuple[int, ...]:
    """Starts where `profile` fits now: free memory slots, compute left, under the per-card maximum."""
    return _placeable_starts(model, occupancy, profile.name)


@lru_cache(maxsize=65536)
def _placeable_starts(model: GpuModel, occupancy: Occupancy, profile_name: str) -> tuple[int, ...]:
    profile = model.mig_profile(profile_name)
    if profile is None:
        return ()
    if occupancy.compute_used + profile.compute_slices > model.mig_compute_slices:
        return ()
    if occupancy.count(profile.name) >= profile.max_instances:
        return ()
    return tuple(
        placement.start for placement in profile.placements if not occupancy.memory_mask & placement.mask
    )


@dataclass(frozen=True, slots=True)
class PlaceableProfile:
    profile: str
    starts: tuple[int, ...]
    ge: Fraction
    memory_mib: int


@dataclass(frozen=True, slots=True)
class GpuPlacementReport:
    gpu_id: str
    model_key: str
    free_memory_slices: int
    free_compute_slices: int
    placeable: tuple[PlaceableProfile, ...]
    largest_placeable: str | None  # highest GE, then most memory; None when nothing fits
    issues: tuple[ParseIssue, ...]


def analyze_gpu_placement(*, gpu: GpuGeometry) -> GpuPlacementReport:
    """Which profiles can still be created on this card, given every existing instance (busy or idle)."""
    model = gpu.model
    if not model.mig_capable or not gpu.mig_enabled:
        return GpuPlacementReport(gpu.gpu_id, model.key, 0, 0, (), None, ())
    occupancy, issues = occupancy_of(model=model, instances=gpu.instances)
    placeable = _placeable(model, occupancy)
    largest = max(placeable, key=lambda p: (p.ge, p.memory_mib), default=None)
    return GpuPlacementReport(
        gpu_id=gpu.gpu_id,
        model_key=model.key,
        free_memory_slices=model.mig_memory_slices - occupancy.memory_mask.bit_count(),
        free_compute_slices=model.mig_compute_slices - occupancy.compute_used,
        placeable=placeable,
        largest_placeable=largest.profile if largest else None,
        issues=issues,
    )


@lru_cache(maxsize=16384)
def _placeable(model: GpuModel, occupancy: Occupancy) -> tuple[PlaceableProfile, ...]:
    found = []
    for profile in model.mig_profiles:
        starts = _placeable_starts(model, occupancy, profile.name)
        if starts:
            found.append(PlaceableProfile(profile.name, starts, profile.ge, profile.memory_mib))
    return tuple(found)


def first_fit_layout(*, model: GpuModel, profiles: Iterable[str]) -> tuple[PlacedInstance, ...]:
    """A layout of a card's instances, largest first, each at the first start that still lets the rest
    fit: the layout mig-parted and the driver create for the same profiles. Device-plugin labels give
    counts, not placements, so pages and fragmentation place them this way.

    Plain first fit strands slices: H100 all-balanced (3g.40gb, 2g.20gb, 2 x 1g.10gb) puts 3g.40gb on
    0-3 and 2g.20gb on 4-5, and the second 1g.10gb finds only slice 7, where no 1g may start; the
    driver puts 2g.20gb on 0-1, the 1g.10gb on 2 and 3 and 3g.40gb on 4-7 (realworld/nvidia-smi-mig.txt,
    DCGM#138). So a start that leaves the rest unplaceable is given up for the next one. When no
    layout holds them all, the one placing the most (the earliest found) is returned, and what it
    leaves out did not fit. A card holds at most 7 instances over 8 slices: the search is tiny."""
    known = sorted(
        (p for p in (model.mig_profile(name) for name in profiles) if p is not None),
        key=lambda p: -p.memory_slices,
    )
    best: list[PlacedInstance] = []

    def search(i: int, placed: list[PlacedInstance]) -> bool:
        nonlocal best
        if len(placed) > len(best):
            best = list(placed)
        if len(best) == len(known):
            return True
        if i == len(known) or len(placed) + len(known) - i <= len(best):
            return False  # even placing every one left would not beat the best so far
        profile = known[i]
        occupancy, _ = occupancy_of(model=model, instances=placed)
        # Instances of one profile are interchangeable: place them at rising starts, once each way.
        floor = placed[-1].start if placed and placed[-1].profile == profile.name else -1
        for start in placeable_starts(model=model, occupancy=occupancy, profile=profile):
            if start <= floor:
                continue
            placed.append(PlacedInstance(profile=profile.name, start=start, in_use=False))
            if search(i + 1, placed):
                return True
            placed.pop()
        return search(i + 1, placed)  # leave this one out: it does not fit beside the others

    search(0, [])
    return tuple(best)
