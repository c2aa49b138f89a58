"""A tenant's month-to-date cost and month-end forecast, rolled up its subtree (pure: no Django).

    month to date = the sum of the tenant's subtree's rounded lines of the month so far (the report
                    the period would have if built now: charges, idle shares, adjustments, credits)
    admitted      = sum over the subtree's admitted requests of
                    GE x hours from the later of its admission and the end of the metered hours
                    to the earlier of its expiry and month end x the GE-hour price then in force,
                    summed exactly and rounded once (half-even) per currency
    forecast      = month to date + admitted

The forecast is what the month costs if nothing more is admitted and everything admitted holds what
it asked for until it expires (or to month end). Hours no rate card prices are counted apart
(``unpriced_ge_hours``), never priced at zero.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction

from metering.chargeback.money import round_money

ZERO = Decimal(0)
FORMULA = (
    "forecast = month_to_date + admitted; month_to_date = the subtree's rounded lines of the month so "
    "far; admitted = sum of GE x hours left (from the later of admission and the last metered hour to "
    "the earlier of expiry and month end) x the GE-hour price then in force, rounded once"
)


@dataclass(frozen=True, slots=True)
class Spent:
    """A rounded line of the month so far."""

    tenant_path: str
    currency: str
    amount: Decimal


@dataclass(frozen=True, slots=True)
class Committed:
    """One admitted request's remaining GE-hours at one price (None: no rate card covers them)."""

    tenant_path: str
    ge_hours: Fraction
    currency: str = ""
    price: Decimal | None = None


@dataclass(frozen=True, slots=True)
class CurrencyTotal:
    currency: str
    month_to_date: Decimal
    admitted: Decimal
    forecast: Decimal


@dataclass(frozen=True, slots=True)
class CostRow:
    tenant_path: str
    totals: tuple[CurrencyTotal, ...]
    admitted_ge_hours: Fraction
    unpriced_ge_hours: Fraction


@dataclass(frozen=True, slots=True)
class CostForecast:
    subtree: CostRow
    children: tuple[CostRow, ...] = field(default=())


def _row(path: str, spent: list[Spent], committed: list[Committed]) -> CostRow:
    to_date: dict[str, Decimal] = defaultdict(Decimal)
    exact: dict[str, Fraction] = defaultdict(Fraction)
    for s in spent:
        to_date[s.currency] += s.amount
    held = Fraction(0)
    unpriced = Fraction(0)
    for c in committed:
        held += c.ge_hours
        if c.price is None:
            unpriced += c.ge_hours
        else:
            exact[c.currency] += c.ge_hours * Fraction(c.price)
    totals = []
    for currency in sorted(set(to_date) | set(exact)):
        fraction = exact.get(currency, Fraction(0))
        admitted = round_money(Decimal(fraction.numerator) / Decimal(fraction.denominator), currency)
        so_far = to_date.get(currency, ZERO)
        totals.append(CurrencyTotal(currency, so_far, admitted, so_far + admitted))
    return CostRow(path, tuple(totals), held, unpriced)


def forecast(
    *, root_path: str, child_paths: list[str], spent: list[Spent], committed: list[Committed]
) -> CostForecast:
    """The subtree of ``root_path`` in all, and each child's subtree (``child_paths``, the root's
    direct children, in the order given). Lines of the root itself count in its total, in no child's."""

    def within(path: str, prefix: str) -> bool:
        return path.startswith(prefix)

    mine_spent = [s for s in spent if within(s.tenant_path, root_path)]
    mine_committed = [c for c in committed if within(c.tenant_path, root_path)]
    children = tuple(
        _row(
            child,
            [s for s in mine_spent if within(s.tenant_path, child)],
            [c for c in mine_committed if within(c.tenant_path, child)],
        )
        for child in child_paths
    )
    return CostForecast(_row(root_path, mine_spent, mine_committed), children)
