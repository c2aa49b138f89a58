"""The plain row every export writer reads: one report line with its period's bounds. No Django."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

__all__ = [
    "FORMULA_STARTS",
    "ExportLine",
    "efficiency",
    "money_text",
    "number_text",
    "sheet_text",
    "utc_text",
]

# A spreadsheet program reads a cell starting with one of these as a formula (OWASP: CSV injection):
# `=HYPERLINK(...)` in a cost centre would become a live link, or worse, in finance's files.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True, slots=True)
class ExportLine:
    period: str  # label, "2025-03"
    period_start: datetime
    period_end: datetime
    line_no: int
    kind: str  # charge, idle, idle_share, adjustment
    tenant_id: str
    tenant_slug: str
    tenant_path: str
    cost_centre: str
    pool: str
    flavor: str
    gpu_model: str
    basis: str
    currency: str
    unit_price: Decimal | None
    ge_hours: Decimal
    used_ge_hours: Decimal | None
    card_hours: Decimal
    amount_exact: Decimal | None
    amount: Decimal | None
    adjusts: str = ""  # label of the period an adjustment corrects
    adjusts_start: datetime | None = None
    adjusts_end: datetime | None = None
    rate_card: str = ""


@functools.lru_cache(maxsize=1024)  # a period's bounds repeat on every line
def utc_text(at: datetime) -> str:
    """FOCUS date/time format: extended ISO 8601 in UTC, ``YYYY-MM-DDTHH:mm:ssZ``."""
    offset = at.utcoffset()
    if offset is None:
        raise ValueError("naive datetime in an export")
    return (at - offset).strftime("%Y-%m-%dT%H:%M:%SZ")


def sheet_text(value: str) -> str:
    """A text cell of an export as a spreadsheet must read it: one that starts like a formula gets a
    leading single quote (OWASP's rule), so Excel, LibreOffice and Sheets show text. For text columns
    only: numbers are written by number_text and money_text and must stay numbers (a credit is -12.34)."""
    return "'" + value if value.startswith(FORMULA_STARTS) else value


def number_text(value: Decimal | None) -> str:
    """A decimal as plain digits (no exponent, no sign for positives); "" for null."""
    if value is None:
        return ""
    return format(abs(value) if value == 0 else value, "f")  # never "-0.000"


def money_text(value: Decimal | None, places: int) -> str:
    if value is None:
        return ""
    rounded = value.quantize(Decimal(1).scaleb(-places))
    return format(abs(rounded) if rounded == 0 else rounded, "f")


def efficiency(line: ExportLine) -> Decimal | None:
    """GE-hours used / GE-hours allocated, to four places; None when either is unknown or zero."""
    if line.used_ge_hours is None or not line.ge_hours:
        return None
    return (line.used_ge_hours / line.ge_hours).quantize(Decimal("0.0001"))
