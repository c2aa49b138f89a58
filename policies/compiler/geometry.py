"""Does a MIG geometry fit one card? Checked against the model's profile table and placements.

A geometry is ``{profile: count}`` for one card. It fits when every instance can be given a start
from its profile's placement list (``nvidia-smi mig -lgipp``) with no two instances overlapping on the
memory-slice axis, the compute slices add up to at most the card's, and no profile exceeds its own
instance limit (only one ``+me`` instance per card). Seven instances at most: a plain backtracking
search is instant.
"""

from __future__ import annotations

from dataclasses import dataclass

from inventory.domain.gpu_models import GpuModel
from inventory.domain.mig_profiles import MigProfile

__all__ = ["GeometryFit", "fit_geometry"]


@dataclass(frozen=True, slots=True)
class GeometryFit:
    fits: bool
    reason: str = ""
    # (profile, start) per instance when it fits, in the order the search placed them
    placements: tuple[tuple[str, int], ...] = ()


def fit_geometry(*, model: GpuModel, geometry: dict[str, int]) -> GeometryFit:
    profiles: list[MigProfile] = []
    for name, count in sorted(geometry.items()):
        profile = model.mig_profile(name)
        if profile is None:
            known = ", ".join(p.name for p in model.mig_profiles)
            return GeometryFit(False, f"{name} is not a MIG profile of {model.key} (it has {known})")
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            return GeometryFit(False, f"the count of {name} must be a whole number >= 0")
        if count > profile.max_instances:
            return GeometryFit(
                False, f"{count} x {name} on one {model.key}: at most {profile.max_instances} fit"
            )
        profiles.extend([profile] * count)
    if not profiles:
        return GeometryFit(False, "a MIG geometry needs at least one instance per card")
    compute = sum(p.compute_slices for p in profiles)
    if compute > model.mig_compute_slices:
        return GeometryFit(
            False,
            f"the instances take {compute} compute slices; a {model.key} has {model.mig_compute_slices}",
        )
    # Largest first: big instances have the fewest starts, so failures show up early.
    profiles.sort(key=lambda p: (-p.memory_slices, p.name))
    placed = _place(profiles, 0, 0, ())
    if placed is None:
        return GeometryFit(
            False,
            f"{_describe(geometry)} cannot be placed on one {model.key}: the instances overlap on its "
            f"{model.mig_memory_slices} memory slices at every allowed start",
        )
    return GeometryFit(True, placements=placed)


def _place(
    profiles: list[MigProfile], index: int, used: int, placed: tuple[tuple[str, int], ...]
) -> tuple[tuple[str, int], ...] | None:
    if index == len(profiles):
        return placed
    profile = profiles[index]
    for placement in profile.placements:
        if used & placement.mask:
            continue
        found = _place(profiles, index + 1, used | placement.mask, (*placed, (profile.name, placement.start)))
        if found is not None:
            return found
    return None


def _describe(geometry: dict[str, int]) -> str:
    return " + ".join(f"{count} x {name}" for name, count in sorted(geometry.items()) if count)
