"""A billing period's chargeback from priced usage: lines per tenant, pool, flavor and GPU model, idle
per pool, tenant roll-ups up the tree, and the reconciliation that proves the totals.

Inputs are already priced by the caller (one unit price per GE-hour for each piece of usage: rate
cards change only at whole hours). A tenant's charge on one pool at one price is its card-hours x
price summed at full precision and rounded once, half-even; when flavors cut it into several lines,
its cents are dealt to them by largest remainder, so the lines sum to the charge. Per pool and
currency the report shows that charged + idle = cards x hours x price, exactly before rounding, and
to the cent after it, the difference between the sum of rounded charges and the rounded total (at
most half a cent per charge, from rounding different tenants' charges apart) being the residue,
shown.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from decimal import Decimal
from fractions import Fraction

from metering.chargeback.money import allocate_rounded, round_money

__all__ = [
    "ADJUSTMENT_KINDS",
    "IDLE_CENTRAL",
    "IDLE_DISTRIBUTED",
    "IDLE_MODES",
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
    # Tenant.path: the ids (hex) from the root, "/<acme's id>/<research's id>/" for acme/research, not
    # slugs (exports show slugs); "" when unassigned
    tenant_path: str
    pool: str
    flavor: str
    gpu_model: str
    currency: str
    unit_price: Decimal | None  # per GE-hour; None when no rate card covers it
    ge_hours: Decimal  # GE-hours held
    card_hours: Decimal  # physical card-hours charged by the card-hour rule
    # or "adjustment" for late data of a closed period, "idle_adjustment" for the idle it moved
    kind: str = "charge"
    adjusts: str = ""  # for adjustments: what it adjusts (period label)
    basis: str = "allocation"  # what ``card_hours`` measures: allocation, utilisation or blended
    used_ge_hours: Decimal | None = None  # GE-hours used (utilisation meter); None when not measured
    rate_card: str = ""  # the rate card's id, "" when unpriced


@dataclass(frozen=True, slots=True)
class PoolCapacity:
    """A pool's physical card-hours at one price, and the part of them nobody held."""

    pool: str
    gpu_model: str
    currency: str
    unit_price: Decimal | None
    card_hours: Decimal
    idle_card_hours: Decimal
    basis: str = "allocation"
    rate_card: str = ""


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
    basis: str = "allocation"
    used_ge_hours: Decimal | None = None
    rate_card: str = ""


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


IDLE_CENTRAL = "central"
IDLE_DISTRIBUTED = "distributed"
IDLE_MODES = (IDLE_CENTRAL, IDLE_DISTRIBUTED)
QTY = Decimal("1e-9")  # a line's card-hours are stored to nine places (the ledger's to 18)
# Corrections of an earlier period: a tenant's usage, and the idle capacity the correction moved.
ADJUSTMENT_KINDS = ("adjustment", "idle_adjustment")

_LineKey = tuple[str, str, str, str, str, str, str, Decimal | None, str, str, str]
_CapacityKey = tuple[str, str, str, Decimal | None, str, str]  # pool, model, currency, price, basis, card


@dataclass
class _LineSums:
    """One line's running sums: what was held and used, and card-hours x price at full precision."""

    ge_hours: Decimal = ZERO
    card_hours: Decimal = ZERO
    amount_exact: Decimal = ZERO  # priced usage only
    used_ge_hours: Decimal | None = None  # None until some usage with a utilisation measure adds to it


@dataclass
class _CapacitySums:
    """One pool's running sums at one price: its card-hours, those nobody held, and their worth."""

    card_hours: Decimal = ZERO
    idle_card_hours: Decimal = ZERO
    physical_exact: Decimal = ZERO  # card-hours x price, full precision


def compute_chargeback(
    *, usage: Iterable[PricedUsage], capacity: Iterable[PoolCapacity], idle: str = IDLE_CENTRAL
) -> Chargeback:
    """Group, price and round the period; deterministic order (sorted keys) so re-runs are identical.

    ``idle`` central: each pool's idle card-hours are one line the platform carries. Distributed: they
    are shared among the pool's charge lines at the same price in proportion to the card-hours each
    was charged (``idle_share`` lines), to the nanohour with the remainder placed so the shares sum
    to the idle exactly; a pool nobody was charged on keeps its idle central."""
    if idle not in IDLE_MODES:
        raise ValueError(f"idle must be one of {IDLE_MODES}, not {idle!r}")
    grouped, unpriced_usage = _group_usage(usage)
    lines = _charge_lines(grouped)
    pools, unpriced_capacity = _group_capacity(capacity)
    charges = [line for line in lines if line.kind == "charge"]
    for key, sums in pools:
        lines.extend(_idle_lines(key, sums, charges, idle))
    lines = _one_rounding_per_charge([_line_quantities(line) for line in lines])
    return Chargeback(
        lines=tuple(lines),
        rollups=_rollups(lines),
        reconciliations=_reconcile(lines, _physical(pools)),
        unpriced_card_hours=(unpriced_usage + unpriced_capacity).quantize(QTY),
    )


def _line_quantities(line: ChargeLine) -> ChargeLine:
    """A line's quantities rounded once, half-even, to the nanohour (the ledger carries 18 places;
    its amount was priced from the exact sum)."""
    used = None if line.used_ge_hours is None else line.used_ge_hours.quantize(QTY)
    return replace(
        line,
        ge_hours=line.ge_hours.quantize(QTY),
        card_hours=line.card_hours.quantize(QTY),
        used_ge_hours=used,
    )


def _group_usage(usage: Iterable[PricedUsage]) -> tuple[dict[_LineKey, _LineSums], Decimal]:
    """Usage summed per line; and the card-hours no rate card priced."""
    grouped: dict[_LineKey, _LineSums] = defaultdict(_LineSums)
    unpriced = ZERO
    for u in usage:
        sums = grouped[
            (u.kind, u.tenant, u.tenant_path, u.pool, u.flavor, u.gpu_model, u.currency, u.unit_price,
             u.adjusts, u.basis, u.rate_card)
        ]  # fmt: skip
        sums.ge_hours += u.ge_hours
        sums.card_hours += u.card_hours
        if u.used_ge_hours is not None:
            sums.used_ge_hours = (
                ZERO if sums.used_ge_hours is None else sums.used_ge_hours
            ) + u.used_ge_hours
        if u.unit_price is None:
            unpriced += u.card_hours
        else:
            sums.amount_exact += u.card_hours * u.unit_price
    return grouped, unpriced


def _charge_lines(grouped: dict[_LineKey, _LineSums]) -> list[ChargeLine]:
    """One line per group in key order, its amount rounded once; unpriced lines carry no amount."""
    lines: list[ChargeLine] = []
    for key in sorted(grouped, key=_sort_key):
        kind, tenant, path, pool, flavor, model, currency, price, adjusts, basis, card = key
        sums = grouped[key]
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
                ge_hours=sums.ge_hours,
                card_hours=sums.card_hours,
                amount_exact=None if price is None else sums.amount_exact,
                amount=None if price is None else round_money(sums.amount_exact, currency),
                adjusts=adjusts,
                basis=basis,
                used_ge_hours=sums.used_ge_hours,
                rate_card=card,
            )
        )
    return lines


def _group_capacity(
    capacity: Iterable[PoolCapacity],
) -> tuple[list[tuple[_CapacityKey, _CapacitySums]], Decimal]:
    """Capacity summed per pool and price, in key order; and the idle card-hours no rate card priced."""
    pools: dict[_CapacityKey, _CapacitySums] = defaultdict(_CapacitySums)
    unpriced = ZERO
    for c in capacity:
        sums = pools[(c.pool, c.gpu_model, c.currency, c.unit_price, c.basis, c.rate_card)]
        sums.card_hours += c.card_hours
        sums.idle_card_hours += c.idle_card_hours
        if c.unit_price is None:
            unpriced += c.idle_card_hours
        else:
            sums.physical_exact += c.card_hours * c.unit_price
    return sorted(pools.items(), key=lambda item: _sort_key(item[0])), unpriced


def _idle_lines(
    key: _CapacityKey, sums: _CapacitySums, charges: list[ChargeLine], idle: str
) -> list[ChargeLine]:
    """A pool's idle at one price: shared among its charge lines when distributed (and priced), the
    part not shared (all of it when central) one line the platform carries."""
    pool, model, currency, price, basis, card = key
    shares: list[ChargeLine] = []
    if idle == IDLE_DISTRIBUTED and price is not None:
        takers = [
            line
            for line in charges
            if (line.pool, line.gpu_model, line.currency, line.unit_price, line.rate_card)
            == (pool, model, currency, price, card)
            and line.card_hours > 0
        ]
        shares = _idle_shares(takers, sums.idle_card_hours, price)
    left = sums.idle_card_hours - sum((s.card_hours for s in shares), ZERO)
    if shares and not left:
        return shares
    idle_exact = None if price is None else left * price
    return [
        *shares,
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
            card_hours=left,
            amount_exact=idle_exact,
            amount=None if idle_exact is None else round_money(idle_exact, currency),
            basis=basis,
            rate_card=card,
        ),
    ]


def _physical(pools: list[tuple[_CapacityKey, _CapacitySums]]) -> dict[tuple[str, str], _Physical]:
    """Per pool and currency, the priced capacity: cards x hours, and x price at full precision.
    Unpriced capacity is counted in ``unpriced_card_hours``, not reconciled in money."""
    physical: dict[tuple[str, str], _Physical] = defaultdict(_Physical)
    for (pool, _model, currency, price, _basis, _card), sums in pools:
        if price is None:
            continue
        total = physical[(pool, currency)]
        total.card_hours += sums.card_hours
        total.exact += sums.physical_exact
    return physical


def _idle_shares(takers: list[ChargeLine], idle_hours: Decimal, price: Decimal) -> list[ChargeLine]:
    """``idle_hours`` shared by the takers' card-hours: each share floored to the nanohour, the
    nanohours left given one each by largest remainder (ties to the earlier line), so they sum
    exactly."""
    weight = sum((t.card_hours for t in takers), ZERO)
    if weight <= 0 or idle_hours == 0:
        return []
    exact = [Fraction(idle_hours) * Fraction(t.card_hours) / Fraction(weight) for t in takers]
    floors = [Fraction(math.floor(e / Fraction(QTY))) * Fraction(QTY) for e in exact]
    left = round((Fraction(idle_hours) - sum(floors, Fraction(0))) / Fraction(QTY))
    order = sorted(range(len(takers)), key=lambda i: (-(exact[i] - floors[i]), i))
    for i in order[:left]:
        floors[i] += Fraction(QTY)
    shares = []
    for taker, hours in zip(takers, floors, strict=True):
        card_hours = (Decimal(hours.numerator) / Decimal(hours.denominator)).quantize(QTY)
        amount_exact = card_hours * price
        shares.append(
            ChargeLine(
                kind="idle_share",
                tenant=taker.tenant,
                tenant_path=taker.tenant_path,
                pool=taker.pool,
                flavor=taker.flavor,
                gpu_model=taker.gpu_model,
                currency=taker.currency,
                unit_price=price,
                ge_hours=ZERO,
                card_hours=card_hours,
                amount_exact=amount_exact,
                amount=round_money(amount_exact, taker.currency),
                basis=taker.basis,
                rate_card=taker.rate_card,
            )
        )
    return shares


def _one_rounding_per_charge(lines: list[ChargeLine]) -> list[ChargeLine]:
    """A tenant's usage of one pool at one price is one charge, however many flavors cut it into
    lines: its exact sum is rounded once and its cents dealt to its lines by largest remainder, so the
    lines add up to the charge (two flavor lines of 8.585 and 8.585 are 8.58 + 8.59 = 17.17, not
    8.59 + 8.59). Idle lines are one per pool and price already; idle shares are dealt the same way,
    per tenant."""
    groups: dict[tuple[object, ...], list[int]] = defaultdict(list)
    for i, line in enumerate(lines):
        if line.kind == "idle" or line.amount_exact is None:
            continue
        groups[
            (line.kind, line.tenant, line.tenant_path, line.pool, line.gpu_model, line.currency,
             line.unit_price, line.adjusts, line.basis, line.rate_card)
        ].append(i)  # fmt: skip
    dealt = list(lines)
    for members in groups.values():
        if len(members) < 2:
            continue
        exacts = [lines[i].amount_exact or ZERO for i in members]
        for i, amount in zip(members, allocate_rounded(exacts, lines[members[0]].currency), strict=True):
            dealt[i] = replace(lines[i], amount=amount)
    return dealt


def _sort_key(key: tuple[object, ...]) -> tuple[str, ...]:
    return tuple("" if part is None else str(part) for part in key)


@dataclass
class _Physical:
    """A pool's priced capacity in one currency: cards x hours, and x price at full precision."""

    card_hours: Decimal = ZERO
    exact: Decimal = ZERO


@dataclass
class _Charged:
    """What a pool's priced lines in one currency carry: charged and idle card-hours, rounded amounts."""

    charged_card_hours: Decimal = ZERO
    idle_card_hours: Decimal = ZERO  # idle lines and idle_share lines
    lines_total: Decimal = ZERO


def _reconcile(
    lines: list[ChargeLine], physical: dict[tuple[str, str], _Physical]
) -> tuple[Reconciliation, ...]:
    """Per pool and currency: the priced charge and idle lines against cards x hours x price.
    Adjustments belong to an earlier period's capacity and are left out."""
    charged: dict[tuple[str, str], _Charged] = defaultdict(_Charged)
    for line in lines:
        if line.kind in ADJUSTMENT_KINDS or line.amount is None:
            continue
        sums = charged[(line.pool, line.currency)]
        # idle_share lines are the pool's idle, carried by tenants: they count as idle here.
        if line.kind == "charge":
            sums.charged_card_hours += line.card_hours
        else:
            sums.idle_card_hours += line.card_hours
        sums.lines_total += line.amount
    result = []
    for pool, currency in sorted(physical):
        capacity = physical[(pool, currency)]
        carried = charged[(pool, currency)]
        rounded = round_money(capacity.exact, currency)
        result.append(
            Reconciliation(
                pool=pool,
                currency=currency,
                card_hours=capacity.card_hours,
                charged_card_hours=carried.charged_card_hours,
                idle_card_hours=carried.idle_card_hours,
                physical_exact=capacity.exact,
                physical=rounded,
                lines_total=carried.lines_total,
                residue=rounded - carried.lines_total,
            )
        )
    return tuple(result)


@dataclass
class _RollupSums:
    ge_hours: Decimal = ZERO
    card_hours: Decimal = ZERO
    amount: Decimal = ZERO


def _rollups(lines: list[ChargeLine]) -> tuple[RollupLine, ...]:
    """Each tenant's lines counted at it and at every ancestor on its path (amounts are the rounded
    lines summed: a roll-up is what its children were charged, nothing re-rounded)."""
    totals: dict[tuple[str, str], _RollupSums] = defaultdict(_RollupSums)
    for line in lines:
        if line.kind == "idle" or not line.tenant_path or line.amount is None:
            continue
        parts = [p for p in line.tenant_path.split("/") if p]
        for depth in range(1, len(parts) + 1):
            sums = totals[("/" + "/".join(parts[:depth]) + "/", line.currency)]
            sums.ge_hours += line.ge_hours
            sums.card_hours += line.card_hours
            sums.amount += line.amount
    return tuple(
        RollupLine(
            tenant_path=path, currency=currency, ge_hours=s.ge_hours, card_hours=s.card_hours, amount=s.amount
        )
        for (path, currency), s in sorted(totals.items())
    )
