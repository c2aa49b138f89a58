"""ISO 4217 minor units (DESIGN §3), pure: the core's page filters and metering's chargeback both
round money to them, so the one table lives in the lowest layer."""

from __future__ import annotations

__all__ = ["MINOR_UNITS", "minor_unit"]

# ISO 4217 minor units for the currencies that differ from two decimals; every other code has two.
MINOR_UNITS = {
    "BHD": 3, "BIF": 0, "CLP": 0, "DJF": 0, "GNF": 0, "IQD": 3, "ISK": 0, "JOD": 3, "JPY": 0,
    "KMF": 0, "KRW": 0, "KWD": 3, "LYD": 3, "OMR": 3, "PYG": 0, "RWF": 0, "TND": 3, "UGX": 0,
    "UYI": 0, "VND": 0, "VUV": 0, "XAF": 0, "XOF": 0, "XPF": 0,
}  # fmt: skip


def minor_unit(currency: str) -> int:
    return MINOR_UNITS.get(currency.upper(), 2)
