"""A statement as data: its lines grouped into charges, adjustments and credits, and the totals.

Pure: takes the period's frozen report lines as ``LineIn`` and returns ``StatementDoc``. Each line's
amount was rounded once when the report was built (DESIGN §3); the totals are sums of those rounded
amounts, so the statement adds up as printed. Unpriced lines (no rate card) are listed with their
GE-hours and no amount, and counted apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from metering.chargeback.money import round_money

__all__ = ["SECTIONS", "LineIn", "StatementDoc", "build_statement", "split_by_currency"]

ZERO = Decimal(0)
# Report line kind -> statement section.
SECTIONS = {"charge": "charges", "idle_share": "charges", "adjustment": "adjustments", "credit": "credits"}


@dataclass(frozen=True, slots=True)
class LineIn:
    line_no: int
    kind: str  # charge, idle_share, adjustment, credit
    tenant_slug: str
    pool: str
    flavor: str
    gpu_model: str
    currency: str
    unit_price: Decimal | None
    ge_hours: Decimal
    amount: Decimal | None  # None: unpriced
    adjusts: str = ""  # the period an adjustment corrects
    reason: str = ""  # a credit's reason

    @property
    def section(self) -> str:
        return SECTIONS.get(self.kind, "charges")

    @property
    def description(self) -> str:
        if self.kind == "credit":
            return self.reason or ("Credit" if (self.amount or ZERO) < 0 else "Charge")
        what = " ".join(p for p in (self.pool, self.flavor or self.gpu_model) if p)
        if self.kind == "idle_share":
            return f"Share of idle capacity, {what}"
        if self.kind == "adjustment":
            return f"Correction of {self.adjusts}, {what}" if self.adjusts else f"Correction, {what}"
        return what


@dataclass(frozen=True, slots=True)
class StatementDoc:
    number: str
    period_label: str
    period_start: datetime
    period_end: datetime
    addressee: str  # tenant name or cost centre
    cost_centre: str
    currency: str
    charges: tuple[LineIn, ...]
    adjustments: tuple[LineIn, ...]
    credits: tuple[LineIn, ...]
    charges_total: Decimal
    adjustments_total: Decimal
    credits_total: Decimal
    total: Decimal
    unpriced_ge_hours: Decimal
    issued_at: datetime

    @property
    def sections(self) -> tuple[tuple[str, tuple[LineIn, ...], Decimal], ...]:
        return (
            ("Charges", self.charges, self.charges_total),
            ("Adjustments", self.adjustments, self.adjustments_total),
            ("Credits and manual charges", self.credits, self.credits_total),
        )


def split_by_currency(lines: Iterable[LineIn]) -> dict[str, list[LineIn]]:
    """Lines per currency: one statement per currency (a period has one unless finance set an
    exchange rate). Unpriced lines (no currency) go with the first currency, or alone when none."""
    by: dict[str, list[LineIn]] = {}
    unpriced: list[LineIn] = []
    for line in sorted(lines, key=lambda item: item.line_no):
        if line.currency:
            by.setdefault(line.currency, []).append(line)
        else:
            unpriced.append(line)
    if not by:
        return {"": unpriced} if unpriced else {}
    first = sorted(by)[0]
    by[first] = sorted(by[first] + unpriced, key=lambda item: item.line_no)
    return dict(sorted(by.items()))


def _sum(lines: Sequence[LineIn], currency: str) -> Decimal:
    total = sum((line.amount for line in lines if line.amount is not None), ZERO)
    return round_money(total, currency) if currency else total


def build_statement(
    *,
    number: str,
    period_label: str,
    period_start: datetime,
    period_end: datetime,
    addressee: str,
    cost_centre: str,
    currency: str,
    lines: Sequence[LineIn],
    issued_at: datetime,
) -> StatementDoc:
    """The statement of ``lines`` (all of one currency, or unpriced)."""
    ordered = sorted(lines, key=lambda item: item.line_no)
    charges = tuple(line for line in ordered if line.section == "charges")
    adjustments = tuple(line for line in ordered if line.section == "adjustments")
    credits = tuple(line for line in ordered if line.section == "credits")
    charges_total, adjustments_total, credits_total = (
        _sum(charges, currency),
        _sum(adjustments, currency),
        _sum(credits, currency),
    )
    return StatementDoc(
        number=number,
        period_label=period_label,
        period_start=period_start,
        period_end=period_end,
        addressee=addressee,
        cost_centre=cost_centre,
        currency=currency,
        charges=charges,
        adjustments=adjustments,
        credits=credits,
        charges_total=charges_total,
        adjustments_total=adjustments_total,
        credits_total=credits_total,
        total=charges_total + adjustments_total + credits_total,
        unpriced_ge_hours=sum((line.ge_hours for line in ordered if line.amount is None), ZERO),
        issued_at=issued_at,
    )
