"""GPU-equivalent (GE) arithmetic, DESIGN §3: the dominant share of one card that a unit takes.

Exact arithmetic with `fractions.Fraction`: a 1g.10gb on an H100 is exactly 1/7 GE, and seven of them
must add up to exactly 1 for budgets and chargeback to reconcile. Decimal would give 0.142857...x7 ≠ 1.
Convert at the edge (database column, API) with `ge_to_decimal`.

GE is always qualified by GPU model by the caller: 1 GE of an H100 is not 1 GE of a T4.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction

__all__ = [
    "WHOLE_GPU_GE",
    "counters_ge",
    "ge_to_decimal",
    "hami_share_ge",
    "mig_ge",
    "replica_ge",
]

WHOLE_GPU_GE = Fraction(1)


def mig_ge(
    *, compute_slices: int, memory_slices: int, card_compute_slices: int, card_memory_slices: int
) -> Fraction:
    """max(compute/card compute, memory/card memory): H100 1g.10gb = 1/7, 1g.20gb = 2/8, 3g.40gb = 1/2."""
    if card_compute_slices <= 0 or card_memory_slices <= 0:
        raise ValueError("a MIG-capable card has at least one compute and one memory slice")
    return max(
        Fraction(compute_slices, card_compute_slices),
        Fraction(memory_slices, card_memory_slices),
    )


def replica_ge(*, replicas: int, base: Fraction = WHOLE_GPU_GE) -> Fraction:
    """A time-slicing or MPS replica: base/replicas (base is 1, or a MIG instance's GE when it is shared)."""
    return base / max(replicas, 1)


def hami_share_ge(
    *,
    cores_percent: int,
    memory_mib: int,
    card_memory_mib: int,
    card_cores_percent: int = 100,
) -> Fraction:
    """max(gpucores/100, gpumem/card memory), capped at one card.

    Pass the card's *registered* memory and cores (hami.io/node-nvidia-register: devmem, devcore): with
    deviceMemoryScaling 1.8 or deviceCoreScaling 5 the scheduler hands out the scaled totals, so a share
    is a fraction of those. cores 0 means "no core limit" in HAMi; the share is then memory-dominant.
    """
    memory_share = Fraction(max(memory_mib, 0), card_memory_mib) if card_memory_mib > 0 else Fraction(0)
    cores_share = (
        Fraction(max(cores_percent, 0), card_cores_percent) if card_cores_percent > 0 else Fraction(0)
    )
    return min(max(memory_share, cores_share), WHOLE_GPU_GE)


def counters_ge(*, consumed: Mapping[str, Fraction], card_totals: Mapping[str, Fraction]) -> Fraction:
    """Dominant share over DRA counters: max over counters of consumed/total, capped at 1.

    Callers group per-slice counters first ("memory-slice-0".."memory-slice-7" become one
    "memory-slices" family), otherwise every slice counter would read as 1/1 = a whole card.
    """
    share = Fraction(0)
    for name, used in consumed.items():
        total = card_totals.get(name)
        if total is None or total <= 0:
            continue
        share = max(share, used / total)
    return min(share, WHOLE_GPU_GE)


def ge_to_decimal(value: Fraction, *, places: int = 6) -> Decimal:
    """Round a GE once, half-even, for storage or display (1/7 -> 0.142857)."""
    quantum = Decimal(1).scaleb(-places)
    return (Decimal(value.numerator) / Decimal(value.denominator)).quantize(quantum, ROUND_HALF_EVEN)
