"""FOCUS 1.3 CSV of a period's lines, with data generator-calculated split cost allocation. No Django.
The columns 1.2 and 1.3 write alike come from focus.shared_values; this module holds what 1.3 changed.

Source: the 1.3 publication text (FinOps-Open-Cost-and-Usage-Spec/FOCUS_Spec 4f52032efbf4,
``specification/datasets/cost_and_usage/``). docs/metering.md documents the allocation method.

Origin charges: one per node and SKU price in a billing period (the node's card-hours at that
price: what its cards cost; metering/services/node_split.py says why per node and not per card).
Each report line of the node's pool and price is cut per node in proportion to its card-hours there
(to the nanohour, largest remainder, so a line's pieces sum to it exactly); the pieces on one node
are that origin's allocated charges: one per holder (tenant, flavor) and one for the node's idle
capacity (AllocatedResourceId null: "the unallocated portion"). AllocatedRatio = the piece's
card-hours / the origin's card-hours, written to 12 places by largest remainder so an origin's
ratios sum to exactly 1; the origin's cost (its card-hours x price, rounded once) is dealt to its
rows by largest remainder of their exact amounts, so they sum to it exactly. A line with no node
weights (a utilisation or blended basis, or no ledger behind it) is one piece, and its pool at that
price is the origin, as before. The origin charge itself is not a row: FOCUS's origin charge is the
one that "existed prior to" the split, and listing it beside its allocated rows would count the
money twice. A tenant's rows over several nodes may therefore differ from its report line (one
rounding per node, not per line) by at most a minor unit per node; x_AmountExact keeps each row's
full precision and x_LineNumber names the report line.

FOCUS requires an allocated row's dimension columns to match the origin's, so the tenant is not
the sub account here (the sub account is the cluster the pool is in; the resource is the node, its
pool in x_Pool) but the AllocatedResourceId, with its path and cost centre in AllocatedTags; the x_
columns describing the holder (x_TenantPath, x_CostCentre, x_Flavor, x_MigProfile, x_ShareType,
x_Utilisation) are allocation attributes.

Unpriced usage (no rate card) is a row like any other, never dropped: FOCUS forbids a null cost, so
its costs and unit prices are 0, its SkuPriceId is the SKU's "unpriced" price, and x_Unpriced is
true (SkuPriceDetails says so too). Adjustments (late usage of a closed period) are corrections,
not split: ChargeClass "Correction", Allocated* null.

SkuId is what a rate card prices: the GPU model, or model/flavor for a flavor card. SkuPriceId is
that SKU's price on one basis in one currency ("H100-80GB/allocation/USD"): it keeps its id when
finance changes the price (a new rate card), so ListUnitPrice moves under one SkuPriceId.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import ROUND_FLOOR, Decimal
from fractions import Fraction

from metering.chargeback.money import minor_unit, round_money
from metering.exports.focus import UNIT, FlavorFacts, FocusContext, shared_values
from metering.exports.formats import table_chunks
from metering.exports.rows import ExportLine, efficiency, money_text, number_text, sheet_text

__all__ = [
    "ALLOCATED_METHOD_ID",
    "BY_POOL_ORDER",
    "FOCUS13_COLUMNS",
    "RATIO_PLACES",
    "SPLIT_KINDS",
    "NodeKey",
    "NodeWeights",
    "apportion",
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
    "x_Pool",
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
# The report lines' order that lets focus13_records hold one pool and model at a time (ORM names).
BY_POOL_ORDER = ("period__starts_at", "pool_name", "gpu_model", "line_no")
QTY_PLACES = 9  # a report line's card-hours are to the nanohour: its pieces are too
# (period label, pool label, GPU model, rate card ref, tenant id, flavor, "charge" | "idle") -> node
# name -> (card-hours, GE-hours) of that line on the node (metering/services/node_split.py)
NodeKey = tuple[str, str, str, str, str, str, str]
NodeWeights = Mapping[NodeKey, Mapping[str, tuple[Decimal, Decimal]]]


@dataclass(slots=True)
class _Split:
    origin: str
    node: str
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


def _node_key(line: ExportLine) -> NodeKey:
    if line.kind == "charge":
        return (line.period, line.pool, line.gpu_model, line.rate_card, line.tenant_id, line.flavor, "charge")
    # an idle share is its tenant's part of the pool's idle: it sits where the idle sat
    return (line.period, line.pool, line.gpu_model, line.rate_card, "", "", "idle")


def _pieces(line: ExportLine, nodes: NodeWeights) -> list[tuple[str, ExportLine]]:
    """The line cut per node in proportion to its card-hours there (GE-hours, and GE-hours used,
    in proportion to its GE-hours there), each to the nanohour by largest remainder so the pieces
    sum to the line exactly. A line with no node weights is one piece with no node."""
    weights = nodes.get(_node_key(line), {}) if line.kind in SPLIT_KINDS else {}
    card_weights = [w[0] for w in weights.values()]
    if len(weights) < 2 or sum(card_weights, Decimal(0)) <= 0 or any(w < 0 for w in card_weights):
        node = next(iter(weights), "") if len(weights) == 1 else ""
        return [(node, line)]
    ge_weights = [w[1] for w in weights.values()]
    if sum(ge_weights, Decimal(0)) <= 0 or any(w < 0 for w in ge_weights):
        ge_weights = card_weights
    card_hours = apportion(line.card_hours, card_weights, QTY_PLACES)
    ge_hours = apportion(line.ge_hours, ge_weights, QTY_PLACES)
    used = apportion(line.used_ge_hours, ge_weights, QTY_PLACES) if line.used_ge_hours is not None else None
    out = []
    for i, node in enumerate(weights):
        price = line.unit_price
        exact = None if price is None or line.amount is None else card_hours[i] * price
        piece = replace(
            line,
            card_hours=card_hours[i],
            ge_hours=ge_hours[i],
            used_ge_hours=used[i] if used is not None else None,
            amount_exact=exact,
            amount=exact,
        )
        out.append((node, piece))
    return out


def apportion(total: Decimal, weights: Sequence[Decimal], places: int) -> list[Decimal]:
    """``total`` shared in proportion to ``weights`` (positive sum), each share to ``places`` decimals
    by largest remainder (ties to the earlier), so the shares sum to ``total`` exactly when it has
    no more places."""
    whole = sum((Fraction(w) for w in weights), Fraction(0))
    exact = [Fraction(total) * Fraction(w) / whole for w in weights]
    unit = Fraction(1, 10**places)
    floors = [math.floor(e / unit) for e in exact]
    left = round(Fraction(total) / unit) - sum(floors)
    order = sorted(range(len(exact)), key=lambda i: (-(exact[i] / unit - floors[i]), i))
    for i in order[:left]:
        floors[i] += 1
    return [Decimal(f).scaleb(-places) for f in floors]


def _split_rows(
    lines: Sequence[ExportLine], ctx: FocusContext, nodes: NodeWeights
) -> Iterator[tuple[ExportLine, _Split | None]]:
    """One period's rows: each split line cut per node (_pieces); every (node, SKU price) is an
    origin charge whose rows get ratios summing to 1 and costs summing to its cost (card-hours x
    price, rounded once), both by largest remainder. Other lines are rows of their own."""
    rows: list[tuple[str, ExportLine]] = []
    for line in lines:
        rows.extend(_pieces(line, nodes) if line.kind in SPLIT_KINDS else [("", line)])
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, (node, row) in enumerate(rows):
        if row.kind in SPLIT_KINDS:
            groups.setdefault((*_origin_key(row), node), []).append(i)
    splits: dict[int, _Split] = {}
    for key, members in groups.items():
        total = sum((rows[i][1].card_hours for i in members), Decimal(0))
        if total <= 0:
            continue  # nothing physical to split: the rows stand alone
        ratios = _ratios([rows[i][1].card_hours for i in members])
        costs = _costs([rows[i][1] for i in members])
        origin = _origin_id(rows[members[0]][1], key[-1], ctx)
        for i, ratio, cost in zip(members, ratios, costs, strict=True):
            splits[i] = _Split(origin=origin, node=key[-1], ratio=ratio, cost=cost)
    for i, (_, row) in enumerate(rows):
        yield row, splits.get(i)


def _origin_id(line: ExportLine, node: str, ctx: FocusContext) -> str:
    origin = f"{line.period}/{line.pool}/" + (f"{node}/" if node else "") + _sku_price_id(line, ctx)
    if line.rate_card:
        origin += f"/{line.rate_card}"  # two rate cards of one SKU price in one month: two origins
    return origin


def _ratios(quantities: list[Decimal]) -> list[Decimal]:
    """Each quantity over their (positive) sum, to RATIO_PLACES by largest remainder. In integers
    when the quantities are whole nanohours (report lines and their pieces are): the same ratios as
    the Fractions give, without a Fraction per row (a quarter of 1.3's time: docs/benchmarks.md)."""
    scaled = [q.scaleb(QTY_PLACES) for q in quantities]
    if any(s != s.to_integral_value() for s in scaled):
        total = sum(quantities, Decimal(0))
        return _largest_remainder([Fraction(q) / Fraction(total) for q in quantities], RATIO_PLACES)
    units = [int(s) for s in scaled]
    whole, scale = sum(units), 10**RATIO_PLACES
    floors = [u * scale // whole for u in units]
    left = scale - sum(floors)
    order = sorted(range(len(units)), key=lambda i: (-((units[i] * scale) % whole), i))
    for i in order[:left]:
        floors[i] += 1
    return [Decimal(f).scaleb(-RATIO_PLACES) for f in floors]


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
    """The rows' costs: the origin's cost (the rows' exact amounts summed, rounded once) dealt to
    them by largest remainder: each floored to the minor unit, the units left one each to the rows
    whose floor lost the most (ties to the earlier row)."""
    if any(m.amount is None or m.amount_exact is None for m in members):
        return [Decimal(0)] * len(members)  # unpriced: no money to split
    currency = members[0].currency
    step = Decimal(1).scaleb(-minor_unit(currency))
    exact = [m.amount_exact or Decimal(0) for m in members]
    floors = [(e / step).to_integral_value(rounding=ROUND_FLOOR) for e in exact]
    left = int(round_money(sum(exact, Decimal(0)), currency) / step - sum(floors, Decimal(0)))
    order = sorted(range(len(members)), key=lambda i: (-(exact[i] / step - floors[i]), i))
    for i in order[:left]:
        floors[i] += 1
    return [f * step for f in floors]


def _sku_id(line: ExportLine, ctx: FocusContext) -> str:
    flavor = ctx.card_flavors.get(line.rate_card, "")
    return line.gpu_model + (f"/{flavor}" if flavor else "")


def _sku_price_id(line: ExportLine, ctx: FocusContext) -> str:
    if line.amount is None:
        return f"{_sku_id(line, ctx)}/unpriced"
    return f"{_sku_id(line, ctx)}/{line.basis or 'allocation'}/{line.currency}"


_STR = json.encoder.encode_basestring  # what json.dumps(ensure_ascii=False) writes
_KEY = json.encoder.encode_basestring_ascii  # what json.dumps(key) writes


def _json(obj: Mapping[str, object]) -> str:
    """A JSON object with Decimals written as exact JSON numbers (json.dumps would refuse them):
    json.dumps' bytes, through its C string encoders directly (a third of 1.3's time went to
    json.dumps per value: docs/benchmarks.md)."""
    parts = []
    for key, value in obj.items():
        if isinstance(value, Decimal):
            text = number_text(value)
        elif isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, str):
            text = _STR(value)
        else:
            text = json.dumps(value, ensure_ascii=False)
        parts.append(f"{_KEY(key)}:{text}")
    return "{" + ",".join(parts) + "}"


@functools.lru_cache(maxsize=4096)  # a handful of SKU prices in a period, on every row
def _sku_details(sku: str, model: str, basis: str, unpriced: bool) -> str:
    details: dict[str, object] = {"GpuCount": Decimal(1), "x_GpuModel": model}
    if sku != model:
        details["x_Flavor"] = sku.split("/", 1)[1]
    details["x_PricingBasis"] = basis or "allocation"
    details["x_Unpriced"] = unpriced
    return _json(details)


@functools.lru_cache(maxsize=65536)  # one per tenant, cost centre and flavor
def _tags(path: str, cost_centre: str, flavor: str) -> str:
    values = {
        f"{TAG_PREFIX}tenant": path,
        f"{TAG_PREFIX}cost-centre": cost_centre,
        f"{TAG_PREFIX}flavor": flavor,
    }
    return _json({k: v for k, v in values.items() if v})


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
            tags = _tags(line.tenant_path, line.cost_centre, line.flavor)
    if split is not None and split.node:
        # The origin is the node's charge: its rows' resource is the node (the pool is x_Pool).
        values["ResourceId"] = text(f"{line.pool}/{split.node}")
        values["ResourceName"] = text(split.node)
        values["ResourceType"] = "GPU node"
    values.update(
        {
            "HostProviderName": ctx.provider,  # the platform hosts its own cards
            "ServiceProviderName": ctx.provider,
            "AllocatedMethodId": method,
            "AllocatedResourceId": allocated_id,
            "AllocatedResourceName": text(allocated_name),
            "AllocatedTags": tags,
            "SkuId": text(sku),
            "SkuPriceDetails": _sku_details(sku, line.gpu_model, line.basis, unpriced),
            "SkuPriceId": text(_sku_price_id(line, ctx)),
            "SubAccountId": text(cluster),
            "SubAccountName": text(cluster),
            "SubAccountType": "Cluster" if cluster else "",
            "AllocatedMethodDetails": details,
            "x_OriginChargeId": text(split.origin) if split else "",
            "x_Pool": text(line.pool),
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
    nodes: NodeWeights | None = None,
    by_pool: bool = False,
) -> Iterator[dict[str, str]]:
    """The rows of ``lines`` (period by period), every line kept (unpriced ones included), split
    lines cut per node where ``nodes`` says where they sat. An origin's rows are known only once all
    its lines are seen: one period is held at a time, or, with ``by_pool`` (the lines come ordered
    by period, pool and GPU model: BY_POOL_ORDER, what focus_sql asks of the database), one pool and
    model of a period, since every origin lies inside one."""
    context = ctx or FocusContext()
    weights = nodes or {}

    def group(line: ExportLine) -> tuple[str, ...]:
        return (line.period, line.pool, line.gpu_model) if by_pool else (line.period,)

    held: list[ExportLine] = []
    for line in lines:
        if held and group(line) != group(held[0]):
            for row, split in _split_rows(held, context, weights):
                yield _record(row, split, context)
            held = []
        held.append(line)
    for row, split in _split_rows(held, context, weights):
        yield _record(row, split, context)


def focus13_chunks(
    lines: Iterable[ExportLine],
    ctx: FocusContext | None = None,
    *,
    columns: Sequence[str] = FOCUS13_COLUMNS,
    nodes: NodeWeights | None = None,
    by_pool: bool = False,
) -> Iterator[bytes]:
    """The FOCUS 1.3 CSV, streamed, with the ``columns`` asked for (all by default)."""
    records = focus13_records(lines, ctx, nodes=nodes, by_pool=by_pool)
    return table_chunks(columns, ([record[c] for c in columns] for record in records))
