"""Money (DESIGN §3): Decimal with an ISO 4217 currency, computed at full precision, rounded once,
half-even, to the currency's minor unit."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

from gpuplatform.currency import MINOR_UNITS, minor_unit

__all__ = ["MINOR_UNITS", "minor_unit", "round_money"]


def round_money(amount: Decimal, currency: str) -> Decimal:
    """``amount`` rounded half-even to the currency's minor unit: call once per line, on the full sum."""
    return amount.quantize(Decimal(1).scaleb(-minor_unit(currency)), rounding=ROUND_HALF_EVEN)
