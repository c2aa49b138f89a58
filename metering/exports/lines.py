"""Report lines out of the database as ExportLine rows, in chunks (a server-side cursor on
PostgreSQL), so an export of a million lines holds one chunk at a time."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from django.db.models import QuerySet, Sum

from metering.exports.rows import ExportLine
from metering.models import BillingPeriod, ReportLine
from tenants.models import Tenant

CHUNK = 2000

FIELDS = (
    "period__label",
    "period__starts_at",
    "period__ends_at",
    "line_no",
    "kind",
    "tenant_id",
    "tenant_slug",
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


def export_lines(
    lines: QuerySet[ReportLine, Any], *, order: tuple[str, ...] = ("period__starts_at", "line_no")
) -> Iterator[ExportLine]:
    """``lines`` (already scoped to the viewer) in the report's order (or ``order``), as plain rows."""
    slugs = {str(pk).replace("-", ""): slug for pk, slug in Tenant.objects.values_list("pk", "slug")}
    readable: dict[str, str] = {}
    bounds = {
        p.label: (p.starts_at, p.ends_at) for p in BillingPeriod.objects.only("label", "starts_at", "ends_at")
    }
    rows = lines.order_by(*order).values_list(*FIELDS).iterator(chunk_size=CHUNK)
    for row in rows:
        (label, start, end, line_no, kind, tenant_id, slug, path, centre, pool, flavor, model, basis,
         currency, price, ge_hours, used, card_hours, exact, amount, adjusts, card) = row  # fmt: skip
        adjusted = bounds.get(adjusts) if adjusts else None
        yield ExportLine(
            period=label,
            period_start=start,
            period_end=end,
            line_no=line_no,
            kind=kind,
            tenant_id=str(tenant_id) if tenant_id else "",
            tenant_slug=slug,
            tenant_path=readable.get(path) or readable.setdefault(path, _slug_path(path, slugs)),
            cost_centre=centre,
            pool=pool,
            flavor=flavor,
            gpu_model=model,
            basis=basis,
            currency=currency,
            unit_price=price,
            ge_hours=ge_hours,
            used_ge_hours=used,
            card_hours=card_hours,
            amount_exact=exact,
            amount=amount,
            adjusts=adjusts,
            adjusts_start=adjusted[0] if adjusted else None,
            adjusts_end=adjusted[1] if adjusted else None,
            rate_card=card,
        )


def _slug_path(path: str, slugs: dict[str, str]) -> str:
    """ "/<hex>/<hex>/" (ids, as stored) as "/acme/research/": what finance reads. A tenant deleted
    since keeps its id."""
    if not path:
        return ""
    return "/" + "".join(f"{slugs.get(part, part)}/" for part in path.strip("/").split("/"))


NO_CENTRE = "(no cost centre)"
PLATFORM = "(platform: idle, unassigned)"


def cost_centre_totals(period: BillingPeriod) -> dict[str, list[dict[str, str]]]:
    """The period's priced lines summed per cost centre and currency (a tenant's lines under its
    centre, lines with no tenant, idle and unassigned, under the platform), and the grand total per
    currency: sums of the rounded amounts, so they add up as the lines are printed. One query."""
    sums = (
        ReportLine.objects.filter(period=period, amount__isnull=False)
        .values_list("tenant_id", "cost_centre", "currency")
        .annotate(total=Sum("amount"))
    )
    centres: dict[tuple[str, str], Decimal] = {}
    grand: dict[str, Decimal] = {}
    for tenant_id, centre, currency, total in sums:
        name = (centre or NO_CENTRE) if tenant_id else PLATFORM
        centres[(name, currency)] = centres.get((name, currency), Decimal(0)) + total
        grand[currency] = grand.get(currency, Decimal(0)) + total
    # Named centres first (by name), then the unnamed and the platform rows.
    order = {NO_CENTRE: 1, PLATFORM: 2}
    return {
        "cost_centres": [
            {"cost_centre": name, "currency": currency, "amount": str(amount)}
            for (name, currency), amount in sorted(
                centres.items(), key=lambda i: (order.get(i[0][0], 0), i[0])
            )
        ],
        "grand_totals": [{"currency": c, "amount": str(a)} for c, a in sorted(grand.items())],
    }
