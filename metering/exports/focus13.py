"""FOCUS 1.3 CSV of a period's lines, with data generator-calculated split cost allocation. No Django.
The columns 1.2 and 1.3 write alike come from focus.shared_values; this module holds what 1.3 changed.

Source: the 1.3 publication text (FinOps-Open-Cost-and-Usage-Spec/FOCUS_Spec 4f52032efbf4,
``specification/datasets/cost_and_usage/``). docs/metering.md documents the allocation method.

Origin charges: one per node pool and SKU price in a billing period (the pool's card-hours at that
price: what its cards cost). The report's lines of that pool and price are its allocated charges:
one per holder (tenant, flavor) and one for idle capacity (AllocatedResourceId null: "the
unallocated portion"), AllocatedRatio = the line's card-hours / the origin's card-hours, written to
12 places by largest remainder so the ratios of one origin sum to exactly 1. The costs of one
origin's rows sum to the origin's cost (its card-hours x price, rounded once): each row carries its
report line's rounded amount, and when rounding line by line left a residue, that residue is moved,
a minor unit at a time, to the rows whose rounding lost the most (largest remainder). The origin
charge itself is not a row: FOCUS's origin charge is the one that "existed prior to" the split, and
listing it beside its allocated rows would count the money twice.

FOCUS requires an allocated row's dimension columns to match the origin's, so the tenant is not
the sub account here (the sub account is the cluster the pool is in) but the AllocatedResourceId,
with its path and cost centre in AllocatedTags; the x_ columns describing the holder (x_TenantPath,
x_CostCentre, x_Flavor, x_MigProfile, x_ShareType, x_Utilisation) are allocation attributes.

Unpriced usage (no rate card) is a row like any other, never dropped: FOCUS forbids a null cost, so
its costs and unit prices are 0, its SkuPriceId is the SKU's "unpriced" price, and x_Unpriced is
true (SkuPriceDetails says so too). Adjustments (late usage of a closed period) are corrections,
not split: ChargeClass "Correction", Allocated* null.

SkuId is what a rate card prices: the GPU model, or model/flavor for a flavor card. SkuPriceId is
that SKU's price on one basis in one currency ("H100-80GB/allocation/USD"): it keeps its id when
finance changes the price (a new rate card), so ListUnitPrice moves under one SkuPriceId.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from metering.chargeback.money import minor_unit, round_money
from metering.exports.focus import UNIT, FlavorFacts, FocusContext, shared_values
from metering.exports.formats import table_chunks
from metering.exports.rows import ExportLine, efficiency, money_text, number_text, sheet_text

__all__ = [
    "ALLOCATED_METHOD_ID",
    "FOCUS13_COLUMNS",
    "RATIO_PLACES",
    "SPLIT_KINDS",
    "SplitOf",
    "focus13_chunks",
    "focus13_records",
    "select_columns",
]

ALLOCATED_METHOD_ID = "gpuplatform-card-hours-v1"
RATIO_PLACES = 12
TAG_PREFIX = "gpuplatform/"

FOCUS13_COLUMNS = (
    # Mandatory (ProviderName and PublisherName are deprecated in 1.3 but still MUST be present)
    "BilledCost",
    "BillingAccountId",
    "BillingAccountName",
    "BillingCurrency",
    "BillingPeriodEnd",
    "BillingPeriodStart",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargePeriodEnd",
    "ChargePeriodStart",
    "ContractedCost",
    "EffectiveCost",
    "HostProviderName",
    "InvoiceIssuerName",
    "ListCost",
    "PricingQuantity",
    "PricingUnit",
    "ProviderName",
    "PublisherName",
    "ServiceCategory",
    "ServiceName",
    "ServiceProviderName",
    # Conditional, applying here
    "AllocatedMethodId",
    "AllocatedResourceId",
    "AllocatedResourceName",
    "AllocatedTags",
    "ConsumedQuantity",
    "ConsumedUnit",
    "ContractedUnitPrice",
    "ListUnitPrice",
    "PricingCategory",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "SkuId",
    "SkuMeter",
    "SkuPriceDetails",
    "SkuPriceId",
    "SubAccountId",
    "SubAccountName",
    "SubAccountType",
    # Recommended
    "AllocatedMethodDetails",
    "ChargeFrequency",
    "ServiceSubcategory",
    # Custom (x_ prefix)
    "x_OriginChargeId",
    "x_TenantId",
    "x_TenantPath",
    "x_CostCentre",
    "x_Flavor",
    "x_GpuModel",
    "x_MigProfile",
    "x_ShareType",
    "x_Basis",
    "x_LineKind",
    "x_LineNumber",
    "x_GeHours",
    "x_GeHoursUsed",
    "x_Utilisation",
    "x_AmountExact",
    "x_Unpriced",
    "x_RateCardId",
    "x_Adjusts",
)


def select_columns(requested: str | None) -> tuple[str, ...]:
    """``?columns=A,B`` as the columns to write, in the order asked, once each; all when absent.
    Raises ValueError naming the unknown ones."""
    if not requested:
        return FOCUS13_COLUMNS
    names = list(dict.fromkeys(part.strip() for part in requested.split(",") if part.strip()))
    unknown = [name for name in names if name not in FOCUS13_COLUMNS]
    if unknown or not names:
        raise ValueError(f"unknown FOCUS column(s): {', '.join(unknown) or '(none given)'}")
    return tuple(names)


SPLIT_KINDS = ("charge", "idle", "idle_share")
SplitOf = tuple[str, int, Decimal, Decimal]  # period label, line number, AllocatedRatio, cost


@dataclass(slots=True)
class _Split:
    origin: str
    ratio: Decimal
    cost: Decimal


def _origin_key(line: ExportLine) -> tuple[str, ...]:
    return (
        line.period,
        line.pool,
        line.gpu_model,
        line.currency,
        str(line.unit_price),
        line.rate_card,
        line.basis,
    )


def _splits(lines: Sequence[ExportLine], ctx: FocusContext) -> dict[int, _Split]:
    """Each split line's origin, ratio and cost (see the module's docstring), by position."""
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, line in enumerate(lines):
        if line.kind in SPLIT_KINDS:
            groups.setdefault(_origin_key(line), []).append(i)
    out: dict[int, _Split] = {}
    for members in groups.values():
        total = sum((lines[i].card_hours for i in members), Decimal(0))
        if total <= 0:
            continue  # nothing physical to split: the rows stand alone
        ratios = _largest_remainder(
            [Fraction(lines[i].card_hours) / Fraction(total) for i in members], RATIO_PLACES
        )
        costs = _costs([lines[i] for i in members])
        origin = _origin_id(lines[members[0]], ctx)
        for i, ratio, cost in zip(members, ratios, costs, strict=True):
            out[i] = _Split(origin=origin, ratio=ratio, cost=cost)
    return out


def _origin_id(line: ExportLine, ctx: FocusContext) -> str:
    origin = f"{line.period}/{line.pool}/{_sku_price_id(line, ctx)}"
    if line.rate_card:
        origin += f"/{line.rate_card}"  # two rate cards of one SKU price in one month: two origins
    return origin


def _largest_remainder(shares: list[Fraction], places: int) -> list[Decimal]:
    """Shares summing to 1 written to ``places`` decimals, still summing to exactly 1: each floored,
    the units left given one each to the largest remainders (ties to the earlier)."""
    unit = Fraction(1, 10**places)
    floors = [math.floor(s / unit) for s in shares]
    left = 10**places - sum(floors)
    order = sorted(range(len(shares)), key=lambda i: (-(shares[i] / unit - floors[i]), i))
    for i in order[:left]:
        floors[i] += 1
    return [Decimal(f).scaleb(-places) for f in floors]


def _costs(members: list[ExportLine]) -> list[Decimal]:
    """The rows' costs: each line's rounded amount, the residue against the origin's rounded cost
    moved a minor unit at a time to the lines whose rounding lost the most in that direction."""
    if any(m.amount is None or m.amount_exact is None for m in members):
        return [Decimal(0)] * len(members)  # unpriced: no money to split
    currency = members[0].currency
    step = Decimal(1).scaleb(-minor_unit(currency))
    costs = [m.amount for m in members if m.amount is not None]
    exact_total = sum((m.amount_exact for m in members if m.amount_exact is not None), Decimal(0))
    residue = round_money(exact_total, currency) - sum(costs, Decimal(0))
    units = int(residue / step)
    if units:
        sign = 1 if units > 0 else -1
        lost = [sign * ((m.amount_exact or Decimal(0)) - (m.amount or Decimal(0))) for m in members]
        for i in sorted(range(len(members)), key=lambda i: (-lost[i], i))[: abs(units)]:
            costs[i] += sign * step
    return costs


def _sku_id(line: ExportLine, ctx: FocusContext) -> str:
    flavor = ctx.card_flavors.get(line.rate_card, "")
    return line.gpu_model + (f"/{flavor}" if flavor else "")


def _sku_price_id(line: ExportLine, ctx: FocusContext) -> str:
    if line.amount is None:
        return f"{_sku_id(line, ctx)}/unpriced"
    return f"{_sku_id(line, ctx)}/{line.basis or 'allocation'}/{line.currency}"


def _json(obj: Mapping[str, object]) -> str:
    """A JSON object with Decimals written as exact JSON numbers (json.dumps would refuse them)."""
    parts = []
    for key, value in obj.items():
        text = number_text(value) if isinstance(value, Decimal) else json.dumps(value, ensure_ascii=False)
        parts.append(f"{json.dumps(key)}:{text}")
    return "{" + ",".join(parts) + "}"


def _record(line: ExportLine, split: _Split | None, ctx: FocusContext) -> dict[str, str]:
    """The shared columns (focus.shared_values) with what 1.3 writes its own way: unpriced lines at
    0, the split's cost, the SKU price, the cluster as sub account, the split allocation columns."""
    text = sheet_text
    unpriced = line.amount is None
    currency = line.currency or ctx.currency
    places = minor_unit(currency)
    if split is not None:
        cost = money_text(split.cost, places)
    else:
        cost = money_text(Decimal(0) if unpriced else line.amount, places)
    values = shared_values(
        line,
        ctx,
        cost=cost,
        price=number_text(Decimal(0) if unpriced else line.unit_price),
        currency=currency,
    )
    cluster = line.pool.split("/", 1)[0] if line.pool else ""
    facts = ctx.flavors.get(line.flavor, FlavorFacts())
    sku = _sku_id(line, ctx)
    holder = line.kind in ("charge", "idle_share")
    allocated_id = allocated_name = tags = details = method = ""
    if split is not None:
        method = ALLOCATED_METHOD_ID
        element: dict[str, object] = {
            "AllocatedRatio": split.ratio,
            "UsageUnit": UNIT,
            "UsageQuantity": line.card_hours,
            "x_GeHours": line.ge_hours,
            "x_LineKind": line.kind,
        }
        details = '{"Elements":[' + _json(element) + "]}"
        if holder:
            allocated_id = line.tenant_id or "unassigned"
            allocated_name = line.tenant_path or "unassigned usage"
            tag_values = {
                f"{TAG_PREFIX}tenant": line.tenant_path,
                f"{TAG_PREFIX}cost-centre": line.cost_centre,
                f"{TAG_PREFIX}flavor": line.flavor,
            }
            tags = _json({k: v for k, v in tag_values.items() if v})
    sku_details: dict[str, object] = {"GpuCount": Decimal(1), "x_GpuModel": line.gpu_model}
    if sku != line.gpu_model:
        sku_details["x_Flavor"] = sku.split("/", 1)[1]
    sku_details["x_PricingBasis"] = line.basis or "allocation"
    sku_details["x_Unpriced"] = unpriced
    values.update(
        {
            "HostProviderName": ctx.provider,  # the platform hosts its own cards
            "ServiceProviderName": ctx.provider,
            "AllocatedMethodId": method,
            "AllocatedResourceId": allocated_id,
            "AllocatedResourceName": text(allocated_name),
            "AllocatedTags": tags,
            "SkuId": text(sku),
            "SkuPriceDetails": _json(sku_details),
            "SkuPriceId": text(_sku_price_id(line, ctx)),
            "SubAccountId": text(cluster),
            "SubAccountName": text(cluster),
            "SubAccountType": "Cluster" if cluster else "",
            "AllocatedMethodDetails": details,
            "x_OriginChargeId": text(split.origin) if split else "",
            "x_TenantId": line.tenant_id,
            "x_MigProfile": text(facts.mig_profile),
            "x_ShareType": text(facts.share_type),
            "x_GeHours": number_text(line.ge_hours),
            "x_Utilisation": number_text(efficiency(line)),
            "x_Unpriced": "true" if unpriced else "false",
            "x_RateCardId": text(line.rate_card),
        }
    )
    return values


def focus13_records(
    lines: Iterable[ExportLine],
    ctx: FocusContext | None = None,
    *,
    splits: Iterable[SplitOf] | None = None,
) -> Iterator[dict[str, str]]:
    """One record per line, in the lines' order, every line kept (unpriced ones included). Lines
    arrive period by period (export_lines' order). ``splits``, when given, are each split line's
    (period, line number, ratio, cost) in the same order, worked out by the database
    (focus_sql.split_rows): the lines stream through. Without them one period is held at a time,
    since an origin's rows are known only once all its lines are seen."""
    context = ctx or FocusContext()
    if splits is not None:
        yield from _streamed_records(lines, iter(splits), context)
        return
    period: list[ExportLine] = []
    for line in lines:
        if period and line.period != period[0].period:
            yield from _period_records(period, context)
            period = []
        period.append(line)
    if period:
        yield from _period_records(period, context)


def _streamed_records(
    lines: Iterable[ExportLine], splits: Iterator[SplitOf], ctx: FocusContext
) -> Iterator[dict[str, str]]:
    pending = next(splits, None)
    for line in lines:
        split = None
        if pending is not None and (pending[0], pending[1]) == (line.period, line.line_no):
            split = _Split(origin=_origin_id(line, ctx), ratio=pending[2], cost=pending[3])
            pending = next(splits, None)
        yield _record(line, split, ctx)


def _period_records(lines: list[ExportLine], ctx: FocusContext) -> Iterator[dict[str, str]]:
    splits = _splits(lines, ctx)
    for i, line in enumerate(lines):
        yield _record(line, splits.get(i), ctx)


def focus13_chunks(
    lines: Iterable[ExportLine],
    ctx: FocusContext | None = None,
    *,
    columns: Sequence[str] = FOCUS13_COLUMNS,
    splits: Iterable[SplitOf] | None = None,
) -> Iterator[bytes]:
    """The FOCUS 1.3 CSV, streamed, with the ``columns`` asked for (all by default)."""
    records = focus13_records(lines, ctx, splits=splits)
    return table_chunks(columns, ([record[c] for c in columns] for record in records))
