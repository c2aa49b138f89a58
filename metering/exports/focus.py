"""FOCUS 1.2 CSV of a period's lines (FinOps Open Cost and Usage Specification, v1.2 tag of
FinOps-Open-Cost-and-Usage-Spec/FOCUS_Spec). No Django.

Every Mandatory column, and the Conditional ones that apply to on-premises GPU chargeback: the
platform publishes unit prices (rate cards: SkuId, SkuPriceId, ListUnitPrice, ContractedUnitPrice),
measures usage (ConsumedQuantity/Unit), has sub accounts (tenants), and bills provisioned resources
(node pools: ResourceId/Name/Type). Recommended ChargeFrequency and ServiceSubcategory are filled too.
Not applicable, so absent: commitment discounts, capacity reservations, regions and availability
zones, PricingCurrency* (the pricing currency is the billing currency), BillingAccountType (one
kind of billing account), Tags (lines carry no user tags), InvoiceId. SubAccountType ("Tenant") is
written though only required with several kinds: it reads better beside SubAccountId.

Values: NULL is an empty field (CSV has no other null); date/times ``YYYY-MM-DDTHH:mm:ssZ`` in UTC;
numbers plain decimals. Costs are the line's amount rounded once to the currency's minor unit (what
is invoiced), so PricingQuantity x unit price matches them to that unit; the full-precision amount
is in x_AmountExact. Unpriced lines (no rate card) have no cost and no currency, both mandatory: they
are left out of FOCUS and shown in the CSV, XLSX and the report's summary.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from metering.chargeback.money import minor_unit
from metering.exports.formats import table_chunks
from metering.exports.rows import ExportLine, money_text, number_text, sheet_text, utc_text

__all__ = ["FOCUS_COLUMNS", "FocusContext", "focus_chunks", "focus_record"]

FOCUS_COLUMNS = (
    # Mandatory
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
    "InvoiceIssuerName",
    "ListCost",
    "PricingQuantity",
    "PricingUnit",
    "ProviderName",
    "PublisherName",
    "ServiceCategory",
    "ServiceName",
    # Conditional, applying here
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
    "SkuPriceId",
    "SubAccountId",
    "SubAccountName",
    "SubAccountType",
    # Recommended
    "ChargeFrequency",
    "ServiceSubcategory",
    # Custom (x_ prefix)
    "x_TenantPath",
    "x_CostCentre",
    "x_Flavor",
    "x_GpuModel",
    "x_Basis",
    "x_Attribution",
    "x_LineKind",
    "x_LineNumber",
    "x_GeHoursAllocated",
    "x_GeHoursUsed",
    "x_AmountExact",
    "x_Adjusts",
)

UNIT = "GPU-Hours"  # a physical card-hour is 1 GE-hour (DESIGN §3)


@dataclass(frozen=True, slots=True)
class FocusContext:
    billing_account_id: str = "gpuplatform"
    billing_account_name: str = "gpuplatform GPU fleet"
    provider: str = "gpuplatform"
    service_name: str = "GPU capacity"


def _attribution(line: ExportLine) -> str:
    if line.kind == "idle":
        return "idle"
    if line.kind == "idle_share":
        return "idle_distributed"
    return "tenant" if line.tenant_id else "unassigned"


def _description(line: ExportLine) -> str:
    what = f"{line.gpu_model} on {line.pool}" + (f" ({line.flavor})" if line.flavor else "")
    if line.kind == "idle":
        return f"Idle capacity of {what}"
    if line.kind == "idle_share":
        return f"Share of idle capacity of {what}"
    if line.kind == "adjustment":
        return f"Late usage of {line.adjusts} for {what}"
    return f"GPU usage ({line.basis}) of {what}"


def focus_record(line: ExportLine, ctx: FocusContext) -> list[str]:
    places = minor_unit(line.currency)
    cost = money_text(line.amount, places)
    correction = line.kind == "adjustment"
    # An adjustment is charged now for hours of the period it corrects (ChargeClass Correction).
    charge_start = line.adjusts_start if correction and line.adjusts_start else line.period_start
    charge_end = line.adjusts_end if correction and line.adjusts_end else line.period_end
    consumed = line.used_ge_hours if line.basis == "utilisation" and line.used_ge_hours is not None else None
    sku = line.gpu_model + (f"/{line.flavor}" if line.flavor else "")
    tenant = bool(line.tenant_id)
    text = sheet_text  # every field that holds text someone typed (focus_sql neutralises the same ones)
    return [
        cost,
        ctx.billing_account_id,
        ctx.billing_account_name,
        text(line.currency),
        utc_text(line.period_end),
        utc_text(line.period_start),
        "Usage",
        "Correction" if correction else "",
        _description(line),
        utc_text(charge_end),
        utc_text(charge_start),
        cost,
        cost,
        ctx.provider,
        cost,
        number_text(line.card_hours),
        UNIT,
        ctx.provider,
        ctx.provider,
        "Compute",
        ctx.service_name,
        number_text(consumed if consumed is not None else line.card_hours),
        UNIT,
        number_text(line.unit_price),
        number_text(line.unit_price),
        "Standard",
        text(line.pool),
        text(line.pool),
        "GPU node pool",
        text(sku),
        "GPU-Hours " + (line.basis or "allocation"),
        text(line.rate_card),
        line.tenant_id if tenant else "",
        text(line.tenant_path) if tenant else "",
        "Tenant" if tenant else "",
        "Usage-Based",
        "Containers",
        text(line.tenant_path),
        text(line.cost_centre),
        text(line.flavor),
        text(line.gpu_model),
        text(line.basis),
        _attribution(line),
        text(line.kind),
        str(line.line_no),
        number_text(line.ge_hours),
        number_text(line.used_ge_hours),
        number_text(line.amount_exact),
        text(line.adjusts),
    ]


def focus_chunks(lines: Iterable[ExportLine], ctx: FocusContext | None = None) -> Iterator[bytes]:
    """The FOCUS CSV, streamed; unpriced lines left out (see the module's docstring)."""
    context = ctx or FocusContext()
    return table_chunks(
        FOCUS_COLUMNS, (focus_record(line, context) for line in lines if line.amount is not None)
    )
