"""The FOCUS CSV of report lines, streamed. FOCUS 1.3 (the default) is written by ``focus13_chunks``
in Python on every database: its split cost allocation cuts lines per node and needs all of an
origin's rows before the first (one pool and GPU model held at a time, the lines read in that
order), which one ``COPY`` row by row cannot give.
FOCUS 1.2 (``?focus_version=1.2``) is written by PostgreSQL itself where it can be, by
``focus_chunks`` in Python elsewhere (the demo's SQLite), the same bytes either way.

Why: formatting a million lines in Python (49 fields each, Decimals and datetimes decoded then
formatted again) ran at ~25,000 lines per CPU-second at best (docs/benchmarks.md). On PostgreSQL
the lines are rendered by one ``COPY (SELECT ...) TO STDOUT (FORMAT csv)`` per billing period, read
through psycopg's ``cursor.copy()`` one row at a time; Python only swaps the line ends.

Why the bytes are the same as ``focus_chunks(export_lines(...))`` gives (tests/metering_exports pins
this on tricky lines):

- quoting: PostgreSQL's CSV quotes a value holding the delimiter, a quote, CR or LF, doubling the
  quotes, as csv.writer's minimal quoting does; it also quotes an empty *string* (to tell it from
  NULL), which csv.writer does not, so every empty text is turned into NULL (``NULLIF``), written
  as nothing.
- line ends: COPY ends each row with LF and csv.writer with CRLF. Each row is one CopyData message
  (the protocol says so), so its last byte is its terminator; a line break inside a quoted value is
  kept as it is, as csv.writer keeps it.
- numbers: ``numeric::text`` is the stored digits at the column's scale, which is what psycopg's
  Decimal holds and ``format(..., "f")`` writes; PostgreSQL has no negative zero.
- money: the amount rounded half-even to the currency's minor unit (``round`` goes half away from
  zero, so a tie whose last digit comes out odd takes ``trunc`` instead); the minor units, the
  readable tenant paths and the period bounds are computed here by the same Python as the other
  path and handed to the query as constants, so nothing of them is re-implemented in SQL.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.db import connection
from django.db.models import QuerySet

from gpuplatform.ids import is_uuid
from inventory.models import ShareableUnit
from metering.chargeback.money import minor_unit
from metering.exports.focus import FOCUS_COLUMNS, UNIT, FlavorFacts, FocusContext, focus_chunks
from metering.exports.focus13 import BY_POOL_ORDER, FOCUS13_COLUMNS, NodeWeights, focus13_chunks
from metering.exports.lines import _slug_path, export_lines
from metering.exports.rows import FORMULA_STARTS, utc_text
from metering.models import BillingPeriod, RateCard, ReportLine
from quotas.models import Flavor
from tenants.models import Tenant

__all__ = ["FOCUS_VERSIONS", "focus13_context", "focus_export"]

FOCUS_VERSIONS = ("1.3", "1.2")

ROWS_PER_CHUNK = 2000  # CopyData rows joined into one chunk of bytes (~1 MB)

# The line's stored columns the query reads, in this order (aliases of the derived table ``s``).
_SOURCE = (
    "line_no",
    "kind",
    "tenant_id",
    "tenant_path",
    "cost_centre",
    "pool_name",
    "flavor_name",
    "gpu_model",
    "basis",
    "currency",
    "unit_price",
    "ge_hours",
    "used_ge_hours",
    "card_hours",
    "amount_exact",
    "amount",
    "adjusts",
    "rate_card_ref",
)

# One SQL expression per FOCUS column (focus.focus_record, column for column). %(name)s are the
# constants bound below; every text that can be empty goes through NULLIF (see the docstring).
_COST = "s.cost"  # rendered once per row by the middle query (_COST_OF)
_COST_OF = """(CASE WHEN abs(s.amount - trunc(s.amount, {places})) * {scale} = 0.5
        AND mod(round(s.amount, {places}) * {scale}, 2) <> 0
    THEN trunc(s.amount, {places}) ELSE round(s.amount, {places}) END)::text"""
_WHAT = (
    "s.gpu_model || ' on ' || s.pool_name"
    " || CASE WHEN s.flavor_name <> '' THEN ' (' || s.flavor_name || ')' ELSE '' END"
)
_TENANT = "s.tenant_id IS NOT NULL"
_FORMULA_STARTS = ", ".join(f"%(formula{i})s" for i in range(len(FORMULA_STARTS)))


def _text(expression: str) -> str:
    """rows.sheet_text in SQL: a leading quote before text that starts like a formula, the starts
    bound from FORMULA_STARTS (one list for both paths). NULL stays NULL."""
    quoted = "'''' || " + expression
    return f"CASE WHEN left({expression}, 1) IN ({_FORMULA_STARTS}) THEN {quoted} ELSE {expression} END"


_PATH = _text("NULLIF(%(paths)s::jsonb ->> s.tenant_path, '')")
_ADJUSTED = "s.kind = 'adjustment' AND s.adjusts <> '' AND %(bounds)s::jsonb ? s.adjusts"
_EXPRESSIONS = {
    "BilledCost": _COST,
    "BillingAccountId": "NULLIF(%(account_id)s, '')",
    "BillingAccountName": "NULLIF(%(account_name)s, '')",
    "BillingCurrency": _text("NULLIF(s.currency, '')"),
    "BillingPeriodEnd": "%(period_end)s",
    "BillingPeriodStart": "%(period_start)s",
    "ChargeCategory": "'Usage'",
    "ChargeClass": "CASE WHEN s.kind = 'adjustment' THEN 'Correction' END",
    "ChargeDescription": f"""CASE s.kind
        WHEN 'idle' THEN 'Idle capacity of ' || {_WHAT}
        WHEN 'idle_share' THEN 'Share of idle capacity of ' || {_WHAT}
        WHEN 'adjustment' THEN 'Late usage of ' || s.adjusts || ' for ' || {_WHAT}
        ELSE 'GPU usage (' || s.basis || ') of ' || {_WHAT} END""",
    "ChargePeriodEnd": f"""CASE WHEN {_ADJUSTED}
        THEN %(bounds)s::jsonb -> s.adjusts ->> 1 ELSE %(period_end)s END""",
    "ChargePeriodStart": f"""CASE WHEN {_ADJUSTED}
        THEN %(bounds)s::jsonb -> s.adjusts ->> 0 ELSE %(period_start)s END""",
    "ContractedCost": _COST,
    "EffectiveCost": _COST,
    "InvoiceIssuerName": "NULLIF(%(provider)s, '')",
    "ListCost": _COST,
    "PricingQuantity": "s.card_hours::text",
    "PricingUnit": "%(unit)s",
    "ProviderName": "NULLIF(%(provider)s, '')",
    "PublisherName": "NULLIF(%(provider)s, '')",
    "ServiceCategory": "'Compute'",
    "ServiceName": "NULLIF(%(service)s, '')",
    "ConsumedQuantity": """CASE WHEN s.basis = 'utilisation' AND s.used_ge_hours IS NOT NULL
        THEN s.used_ge_hours ELSE s.card_hours END::text""",
    "ConsumedUnit": "%(unit)s",
    "ContractedUnitPrice": "s.unit_price::text",
    "ListUnitPrice": "s.unit_price::text",
    "PricingCategory": "'Standard'",
    "ResourceId": _text("NULLIF(s.pool_name, '')"),
    "ResourceName": _text("NULLIF(s.pool_name, '')"),
    "ResourceType": "'GPU node pool'",
    "SkuId": _text(
        "NULLIF(s.gpu_model || CASE WHEN s.flavor_name <> '' THEN '/' || s.flavor_name ELSE '' END, '')"
    ),
    "SkuMeter": "'GPU-Hours ' || CASE WHEN s.basis <> '' THEN s.basis ELSE 'allocation' END",
    "SkuPriceId": _text("NULLIF(s.rate_card_ref, '')"),
    "SubAccountId": "s.tenant_id::text",
    "SubAccountName": f"CASE WHEN {_TENANT} THEN {_PATH} END",
    "SubAccountType": f"CASE WHEN {_TENANT} THEN 'Tenant' END",
    "ChargeFrequency": "'Usage-Based'",
    "ServiceSubcategory": "'Containers'",
    "x_TenantPath": _PATH,
    "x_CostCentre": _text("NULLIF(s.cost_centre, '')"),
    "x_Flavor": _text("NULLIF(s.flavor_name, '')"),
    "x_GpuModel": _text("NULLIF(s.gpu_model, '')"),
    "x_Basis": _text("NULLIF(s.basis, '')"),
    "x_Attribution": f"""CASE WHEN s.kind = 'idle' THEN 'idle'
        WHEN s.kind = 'idle_share' THEN 'idle_distributed'
        WHEN {_TENANT} THEN 'tenant' ELSE 'unassigned' END""",
    "x_LineKind": _text("NULLIF(s.kind, '')"),
    "x_LineNumber": "s.line_no::text",
    "x_GeHoursAllocated": "s.ge_hours::text",
    "x_GeHoursUsed": "s.used_ge_hours::text",
    "x_AmountExact": "s.amount_exact::text",
    "x_Adjusts": _text("NULLIF(s.adjusts, '')"),
}
assert tuple(_EXPRESSIONS) == FOCUS_COLUMNS, "one expression per FOCUS column, in order"

# Only constant SQL text is concatenated here: every value is a bound parameter.
_SELECT = (
    "SELECT "  # noqa: S608
    + ",\n".join(_EXPRESSIONS.values())
    # OFFSET 0 keeps the middle query whole (not merged into this one), so the cost is rendered once
    # per row, not once per cost column; each level reads the one below in its order (line number).
    + "\nFROM (SELECT s.*, CASE s.currency {costs} END AS cost"
    + "\n    FROM ({lines}) AS s(" + ", ".join(_SOURCE) + ") OFFSET 0) AS s"
)  # fmt: skip


def focus_export(
    lines: QuerySet[ReportLine, Any],
    ctx: FocusContext | None = None,
    *,
    version: str = "1.3",
    columns: tuple[str, ...] = FOCUS13_COLUMNS,
    nodes: NodeWeights | None = None,
) -> Iterator[bytes]:
    """The FOCUS CSV of ``lines`` (already scoped to the viewer), in the report's order. 1.3: every
    line, split cost allocation per node where ``nodes`` (services.node_split) says where each line
    sat, ``columns`` chosen. 1.2: by COPY on PostgreSQL, else by
    ``focus_chunks``; unpriced lines left out either way (1.2 has no way to mark them)."""
    if version == "1.3":
        # By pool: the writer holds one pool and model of a period, not the period (a million lines).
        return focus13_chunks(
            export_lines(lines, order=BY_POOL_ORDER),
            focus13_context(lines),
            columns=columns,
            nodes=nodes,
            by_pool=True,
        )
    if version != "1.2":
        raise ValueError(f"FOCUS version must be one of {FOCUS_VERSIONS}")
    if connection.vendor != "postgresql":
        return focus_chunks(export_lines(lines), ctx)
    return copied_focus_chunks(lines, ctx)


def focus13_context(lines: QuerySet[ReportLine, Any]) -> FocusContext:
    """What the pure writer needs from other tables: the flavor each rate card prices (the SKU), each
    flavor's share type and MIG profile (from the inventory's units of its resource), and the
    currency to state on a line that has none (unpriced usage)."""
    refs = lines.order_by().exclude(rate_card_ref="").values_list("rate_card_ref", flat=True).distinct()
    cards = {ref for ref in refs if is_uuid(ref)}  # a frozen reference, not a key: may name no card
    card_flavors = {
        str(pk): name or ""
        for pk, name in RateCard.objects.filter(pk__in=cards).values_list("pk", "flavor__name")
    }
    names = set(lines.order_by().exclude(flavor_name="").values_list("flavor_name", flat=True).distinct())
    flavors = {f.name: _flavor_facts(f) for f in Flavor.objects.filter(name__in=names)}
    currency = lines.order_by().exclude(currency="").values_list("currency", flat=True).first() or "USD"
    return FocusContext(currency=currency, flavors=flavors, card_flavors=card_flavors)


def _flavor_facts(flavor: Flavor) -> FlavorFacts:
    resources = [r.get("name", "") for r in flavor.resources if isinstance(r, dict)]
    unit = (
        ShareableUnit.objects.filter(resource_name__in=resources)
        .order_by("resource_name")
        .values_list("kind", "mig_profile")
        .first()
    )
    if unit is not None:
        return FlavorFacts(share_type=unit[0], mig_profile=unit[1])
    mig = next((r.split("mig-", 1)[1] for r in resources if "mig-" in r), "")
    return FlavorFacts(share_type="mig_instance" if mig else "", mig_profile=mig)


def copied_focus_chunks(lines: QuerySet[ReportLine, Any], ctx: FocusContext | None = None) -> Iterator[bytes]:
    """PostgreSQL's own CSV of ``lines``, one ``COPY`` per billing period in the periods' order
    (each one an index scan of the period's lines by number: no sort of a month)."""
    context = ctx or FocusContext()
    yield (",".join(FOCUS_COLUMNS) + "\r\n").encode()  # plain names: csv.writer quotes none
    slugs = {str(pk).replace("-", ""): slug for pk, slug in Tenant.objects.values_list("pk", "slug")}
    periods = list(
        BillingPeriod.objects.order_by("starts_at").values_list("pk", "label", "starts_at", "ends_at")
    )
    bounds = json.dumps({label: [utc_text(start), utc_text(end)] for _, label, start, end in periods})
    for pk, _, start, end in periods:
        priced = lines.filter(period_id=pk, amount__isnull=False)
        seen = priced.order_by().values_list("tenant_path", "currency").distinct()
        paths: dict[str, str] = {}
        places: dict[str, int] = {}
        for path, currency in seen:
            paths.setdefault(path, _slug_path(path, slugs))
            places.setdefault(currency, minor_unit(currency))
        if not places:
            continue  # nothing of this period in the viewer's scope
        # The inner query is Django's (the viewer's scope, its joins and its parameters, %s style);
        # the outer one's constants are bound by name, so the inner placeholders are renamed apart.
        inner, inner_params = priced.order_by("line_no").values_list(*_SOURCE).query.sql_with_params()
        constants: dict[str, Any] = {
            "paths": json.dumps(paths),
            "bounds": bounds,
            "period_start": utc_text(start),
            "period_end": utc_text(end),
            "account_id": context.billing_account_id,
            "account_name": context.billing_account_name,
            "provider": context.provider,
            "service": context.service_name,
            "unit": UNIT,
        } | {f"formula{i}": start for i, start in enumerate(FORMULA_STARTS)}
        # One branch per currency seen, its minor unit written into the SQL as a number.
        costs = []
        for i, (currency, digits) in enumerate(sorted(places.items())):
            constants[f"currency{i}"] = currency
            rendered = _COST_OF.format(places=int(digits), scale=f"1{'0' * int(digits)}")
            costs.append(f"WHEN %(currency{i})s THEN {rendered}")
        names = [f"p{i}" for i in range(len(inner_params))]
        named_inner = inner.replace("%%", "\0") % tuple(f"%({n})s" for n in names)
        sql = _SELECT.format(lines=named_inner.replace("\0", "%%"), costs=" ".join(costs))
        params = constants | dict(zip(names, inner_params, strict=True))
        yield from _copy_rows(f"COPY ({sql}) TO STDOUT (FORMAT csv)", params)


def _copy_rows(statement: str, params: dict[str, Any]) -> Iterator[bytes]:
    connection.ensure_connection()
    with connection.cursor() as wrapper:
        raw = wrapper.cursor  # psycopg's own cursor: Django's wrapper has no copy()
        with raw.copy(statement, params) as copy:
            rows: list[bytes] = []
            for row in copy:
                rows.append(bytes(row))
                if len(rows) == ROWS_PER_CHUNK:
                    yield _crlf(rows)
                    rows = []
            if rows:
                yield _crlf(rows)


def _crlf(rows: list[bytes]) -> bytes:
    """The rows with CRLF line ends. One LF per row means none inside a value: swap them all at
    once; else swap each row's last byte only (its terminator), leaving the quoted ones."""
    block = b"".join(rows)
    if block.count(b"\n") == len(rows):
        return block.replace(b"\n", b"\r\n")
    return b"".join(row[:-1] + b"\r\n" for row in rows)
