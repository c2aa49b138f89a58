"""Internal fragmentation (seed, MIG chapter): asked for 9 GB, got a 10 GB slice; the rest is waste.

Waste is measured against the profile's usable memory (what nvidia-smi reports, e.g. 9984 MiB for an
H100 1g.10gb), and its GE is the part of the slice's GE that pays for unused memory:
wasted_ge = profile GE x wasted MiB / granted MiB.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from inventory.domain.gpu_models import GpuModel
from inventory.domain.mig_profiles import MigProfile

__all__ = [
    "InternalFragmentation",
    "internal_fragmentation",
    "smallest_fitting_profile",
    "sum_internal_waste",
]


@dataclass(frozen=True, slots=True)
class InternalFragmentation:
    model_key: str
    requested_memory_mib: int
    profile: str | None  # None: nothing on this card is big enough
    granted_memory_mib: int
    wasted_memory_mib: int
    wasted_ge: Fraction


def smallest_fitting_profile(
    *, model: GpuModel, memory_mib: int, compute_slices: int = 1, media_extensions: bool = False
) -> MigProfile | None:
    """The profile a scheduler should pick: enough memory and compute, least GE, then least memory.

    "+me" profiles are only chosen when media engines are asked for: there is one per card.
    """
    candidates = [
        profile
        for profile in model.mig_profiles
        if profile.memory_mib >= memory_mib
        and profile.compute_slices >= compute_slices
        and profile.media_extensions == media_extensions
        and profile.name.count("+") + profile.name.count("-") == (1 if media_extensions else 0)
    ]
    return min(candidates, key=lambda p: (p.ge, p.memory_mib, p.compute_slices), default=None)


def internal_fragmentation(
    *, model: GpuModel, requested_memory_mib: int, granted_profile: str | None = None
) -> InternalFragmentation:
    """Waste of one request; the granted profile defaults to the smallest that fits."""
    profile = (
        model.mig_profile(granted_profile)
        if granted_profile is not None
        else smallest_fitting_profile(model=model, memory_mib=requested_memory_mib)
    )
    if profile is None:
        return InternalFragmentation(model.key, requested_memory_mib, None, 0, 0, Fraction(0))
    wasted = max(profile.memory_mib - requested_memory_mib, 0)
    return InternalFragmentation(
        model_key=model.key,
        requested_memory_mib=requested_memory_mib,
        profile=profile.name,
        granted_memory_mib=profile.memory_mib,
        wasted_memory_mib=wasted,
        wasted_ge=profile.ge * Fraction(wasted, profile.memory_mib),
    )


def sum_internal_waste(*, items: Iterable[InternalFragmentation]) -> dict[str, tuple[int, Fraction]]:
    """Total wasted MiB and GE per GPU model."""
    totals: dict[str, tuple[int, Fraction]] = {}
    for item in items:
        mib, ge = totals.get(item.model_key, (0, Fraction(0)))
        totals[item.model_key] = (mib + item.wasted_memory_mib, ge + item.wasted_ge)
    return totals
