"""Money (DESIGN §3): Decimal with an ISO 4217 currency, computed at full precision, rounded once,
half-even, to the currency's minor unit."""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import ROUND_HALF_EVEN, Decimal

from gpuplatform.currency import MINOR_UNITS, minor_unit

__all__ = ["MINOR_UNITS", "allocate_rounded", "minor_unit", "round_money"]


def round_money(amount: Decimal, currency: str) -> Decimal:
    """``amount`` rounded half-even to the currency's minor unit: call once per line, on the full sum."""
    return amount.quantize(Decimal(1).scaleb(-minor_unit(currency)), rounding=ROUND_HALF_EVEN)


def allocate_rounded(exacts: Sequence[Decimal], currency: str) -> list[Decimal]:
    """Amounts for lines that make up one charge (one tenant, pool and price cut by flavor): the
    charge's full-precision sum is rounded once, half-even, and the minor units it holds are dealt to
    the lines by largest remainder (ties to the earlier line), so the lines sum to the rounded charge
    and each is within one minor unit of its exact amount. Rounding the lines one by one instead could
    leave the charge a cent off (17.18 where 17.17 is owed)."""
    if not exacts:
        return []
    unit = Decimal(1).scaleb(-minor_unit(currency))
    units = [e / unit for e in exacts]
    floors = [math.floor(u) for u in units]
    total = int(round_money(sum(exacts, Decimal(0)), currency) / unit)
    left = total - sum(floors)  # 0 <= left <= len(exacts): the floors lose less than one unit each
    order = sorted(range(len(units)), key=lambda i: (-(units[i] - floors[i]), i))
    for i in order[:left]:
        floors[i] += 1
    return [(Decimal(f) * unit).quantize(unit) for f in floors]
