"""GPU-equivalent (GE) arithmetic, DESIGN §3: the dominant share of one card that a unit takes.

Exact arithmetic with `fractions.Fraction`: a 1g.10gb on an H100 is exactly 1/7 GE, and seven of them
must add up to exactly 1 for budgets and chargeback to reconcile. Decimal would give 0.142857...x7 ≠ 1.
Convert at the edge with `ge_to_decimal`: to six places for people (API, pages), to
`STORED_GE_PLACES` for the database, from which `ge_from_decimal` gives the exact fraction back.

GE is always qualified by GPU model by the caller: 1 GE of an H100 is not 1 GE of a T4.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction
from functools import lru_cache

__all__ = [
    "MAX_GE_DENOMINATOR",
    "STORED_GE_PLACES",
    "WHOLE_GPU_GE",
    "counters_ge",
    "ge_from_decimal",
    "ge_to_decimal",
    "hami_share_ge",
    "mig_ge",
    "replica_ge",
]

WHOLE_GPU_GE = Fraction(1)
# A GE is a ratio of small integers: slices (k/7, k/8), replicas (1/n), percent of cores (k/100), MiB
# of a card's memory (k/81559). Their denominators stay under MAX_GE_DENOMINATOR, and two different
# such fractions differ by at least 1/MAX_GE_DENOMINATOR**2 = 1e-12. Stored to 18 places (an error of
# at most 5e-19, far inside half that gap), the nearest fraction of denominator <= 1e6 to the stored
# decimal is the GE itself: 0.142857142857142857 reads back as exactly 1/7. Six places could not be
# read back (0.142857 is 142857/10**6, itself a fraction under the bound) and left 1.4e-7 GE per hour
# of each 1g.10gb to idle.
MAX_GE_DENOMINATOR = 10**6
STORED_GE_PLACES = 18


@lru_cache(maxsize=1024)  # a few profiles, asked once per MIG device of every slice listed
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


def ge_from_decimal(value: Decimal) -> Fraction:
    """The exact GE a stored decimal stands for (1/7 from 0.142857142857142857): the nearest fraction
    whose denominator is at most MAX_GE_DENOMINATOR. A GE of a larger denominator (none is known)
    would read back within 1e-12 of itself."""
    return Fraction(value).limit_denominator(MAX_GE_DENOMINATOR)
