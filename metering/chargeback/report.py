"""A billing period's chargeback from priced usage: lines per tenant, pool, flavor and GPU model, idle
per pool, tenant roll-ups up the tree, and the reconciliation that proves the totals.

Inputs are already priced by the caller (one unit price per GE-hour for each piece of usage: rate
cards change only at whole hours). Each line's amount is its card-hours x price summed at full
precision and rounded once, half-even. Per pool and currency the report shows that
charged + idle = cards x hours x price, exactly before rounding, and to the cent after it, the
difference between the sum of rounded lines and the rounded total being the residue, shown.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from metering.chargeback.money import round_money

__all__ = [
    "ChargeLine",
    "Chargeback",
    "PoolCapacity",
    "PricedUsage",
    "Reconciliation",
    "RollupLine",
    "compute_chargeback",
]

ZERO = Decimal(0)


@dataclass(frozen=True, slots=True)
class PricedUsage:
    """Some tenant's allocated usage on one pool at one price (many hourly rows summed, or one)."""

    tenant: str  # tenant id, "" for the unassigned bucket
    tenant_path: str  # materialised path, "/acme/research/vision/", "" when unassigned
    pool: str
    flavor: str
    gpu_model: str
    currency: str
    unit_price: Decimal | None  # per GE-hour; None when no rate card covers it
    ge_hours: Decimal  # GE-hours held
    card_hours: Decimal  # physical card-hours charged by the card-hour rule
    kind: str = "charge"  # or "adjustment" for late data of a closed period
    adjusts: str = ""  # for adjustments: what it adjusts (period label)


@dataclass(frozen=True, slots=True)
class PoolCapacity:
    """A pool's physical card-hours at one price, and the part of them nobody held."""

    pool: str
    gpu_model: str
    currency: str
    unit_price: Decimal | None
    card_hours: Decimal
    idle_card_hours: Decimal


@dataclass(frozen=True, slots=True)
class ChargeLine:
    kind: str  # charge, idle, adjustment
    tenant: str
    tenant_path: str
    pool: str
    flavor: str
    gpu_model: str
    currency: str
    unit_price: Decimal | None
    ge_hours: Decimal
    card_hours: Decimal
    amount_exact: Decimal | None
    amount: Decimal | None
    adjusts: str = ""


@dataclass(frozen=True, slots=True)
class RollupLine:
    tenant_path: str
    currency: str
    ge_hours: Decimal
    card_hours: Decimal
    amount: Decimal


@dataclass(frozen=True, slots=True)
class Reconciliation:
    pool: str
    currency: str
    card_hours: Decimal  # physical cards x hours
    charged_card_hours: Decimal
    idle_card_hours: Decimal
    physical_exact: Decimal  # cards x hours x price, full precision
    physical: Decimal  # rounded once
    lines_total: Decimal  # sum of the pool's rounded charge and idle lines
    residue: Decimal  # physical - lines_total: what rounding the lines one by one moved

    @property
    def holds(self) -> bool:
        return self.lines_total + self.residue == self.physical


@dataclass(frozen=True, slots=True)
class Chargeback:
    lines: tuple[ChargeLine, ...]
    rollups: tuple[RollupLine, ...]
    reconciliations: tuple[Reconciliation, ...]
    unpriced_card_hours: Decimal  # usage and capacity no rate card covered: shown, not priced


_LineKey = tuple[str, str, str, str, str, str, str, Decimal | None, str]


def compute_chargeback(*, usage: Iterable[PricedUsage], capacity: Iterable[PoolCapacity]) -> Chargeback:
    """Group, price and round the period; deterministic order (sorted keys) so re-runs are identical."""
    grouped: dict[_LineKey, list[Decimal]] = defaultdict(lambda: [ZERO, ZERO, ZERO])
    unpriced = ZERO
    for u in usage:
        key = (
            u.kind,
            u.tenant,
            u.tenant_path,
            u.pool,
            u.flavor,
            u.gpu_model,
            u.currency,
            u.unit_price,
            u.adjusts,
        )
        acc = grouped[key]
        acc[0] += u.ge_hours
        acc[1] += u.card_hours
        if u.unit_price is None:
            unpriced += u.card_hours
        else:
            acc[2] += u.card_hours * u.unit_price
    lines: list[ChargeLine] = []
    for key in sorted(grouped, key=_sort_key):
        kind, tenant, path, pool, flavor, model, currency, price, adjusts = key
        ge_hours, card_hours, exact = grouped[key]
        lines.append(
            ChargeLine(
                kind=kind,
                tenant=tenant,
                tenant_path=path,
                pool=pool,
                flavor=flavor,
                gpu_model=model,
                currency=currency,
                unit_price=price,
                ge_hours=ge_hours,
                card_hours=card_hours,
                amount_exact=None if price is None else exact,
                amount=None if price is None else round_money(exact, currency),
                adjusts=adjusts,
            )
        )
    idle: dict[tuple[str, str, str, Decimal | None], list[Decimal]] = defaultdict(lambda: [ZERO, ZERO, ZERO])
    for c in capacity:
        acc = idle[(c.pool, c.gpu_model, c.currency, c.unit_price)]
        acc[0] += c.card_hours
        acc[1] += c.idle_card_hours
        if c.unit_price is None:
            unpriced += c.idle_card_hours
        else:
            acc[2] += c.card_hours * c.unit_price
    physical: dict[tuple[str, str], list[Decimal]] = defaultdict(lambda: [ZERO, ZERO])
    for (pool, model, currency, price), (card_hours, idle_hours, physical_exact) in sorted(
        idle.items(), key=lambda item: _sort_key((*item[0][:3], item[0][3]))
    ):
        idle_exact = None if price is None else idle_hours * price
        lines.append(
            ChargeLine(
                kind="idle",
                tenant="",
                tenant_path="",
                pool=pool,
                flavor="",
                gpu_model=model,
                currency=currency,
                unit_price=price,
                ge_hours=ZERO,
                card_hours=idle_hours,
                amount_exact=idle_exact,
                amount=None if idle_exact is None else round_money(idle_exact, currency),
            )
        )
        if price is None:
            continue  # unpriced capacity is counted in unpriced_card_hours, not reconciled in money
        acc = physical[(pool, currency)]
        acc[0] += card_hours
        acc[1] += physical_exact
    return Chargeback(
        lines=tuple(lines),
        rollups=_rollups(lines),
        reconciliations=_reconcile(lines, physical),
        unpriced_card_hours=unpriced,
    )


def _sort_key(key: tuple[object, ...]) -> tuple[str, ...]:
    return tuple("" if part is None else str(part) for part in key)


def _reconcile(
    lines: list[ChargeLine], physical: dict[tuple[str, str], list[Decimal]]
) -> tuple[Reconciliation, ...]:
    """Per pool and currency: the priced charge and idle lines against cards x hours x price.
    Adjustments belong to an earlier period's capacity and are left out."""
    charged: dict[tuple[str, str], list[Decimal]] = defaultdict(lambda: [ZERO, ZERO, ZERO])
    for line in lines:
        if line.kind == "adjustment" or line.amount is None:
            continue
        acc = charged[(line.pool, line.currency)]
        acc[0 if line.kind == "charge" else 1] += line.card_hours
        acc[2] += line.amount
    result = []
    for pool, currency in sorted(physical):
        card_hours, exact = physical[(pool, currency)]
        charged_hours, idle_hours, lines_total = charged[(pool, currency)]
        rounded = round_money(exact, currency)
        result.append(
            Reconciliation(
                pool=pool,
                currency=currency,
                card_hours=card_hours,
                charged_card_hours=charged_hours,
                idle_card_hours=idle_hours,
                physical_exact=exact,
                physical=rounded,
                lines_total=lines_total,
                residue=rounded - lines_total,
            )
        )
    return tuple(result)


def _rollups(lines: list[ChargeLine]) -> tuple[RollupLine, ...]:
    """Each tenant's lines counted at it and at every ancestor on its path (amounts are the rounded
    lines summed: a roll-up is what its children were charged, nothing re-rounded)."""
    totals: dict[tuple[str, str], list[Decimal]] = defaultdict(lambda: [ZERO, ZERO, ZERO])
    for line in lines:
        if line.kind == "idle" or not line.tenant_path or line.amount is None:
            continue
        parts = [p for p in line.tenant_path.split("/") if p]
        for depth in range(1, len(parts) + 1):
            acc = totals[("/" + "/".join(parts[:depth]) + "/", line.currency)]
            acc[0] += line.ge_hours
            acc[1] += line.card_hours
            acc[2] += line.amount
    return tuple(
        RollupLine(tenant_path=path, currency=currency, ge_hours=v[0], card_hours=v[1], amount=v[2])
        for (path, currency), v in sorted(totals.items())
    )
