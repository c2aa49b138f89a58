"""FOCUS CSV of a period's lines: what FOCUS 1.2 and 1.3 write alike, and the 1.2 file (FinOps Open
Cost and Usage Specification, v1.2 tag of FinOps-Open-Cost-and-Usage-Spec/FOCUS_Spec). No Django.
focus13.py adds only what 1.3 changed: its column list, the provider columns, the SKU price, the
sub account and the split cost allocation.

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
is in x_AmountExact. Unpriced lines (no rate card) have no cost and no currency, both mandatory in
1.2: they are left out of its file and shown in the CSV, XLSX and the report's summary.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from metering.chargeback.money import minor_unit
from metering.exports.formats import table_chunks
from metering.exports.rows import ExportLine, money_text, number_text, sheet_text, utc_text

__all__ = [
    "FOCUS_COLUMNS",
    "UNIT",
    "FlavorFacts",
    "FocusContext",
    "focus_chunks",
    "focus_record",
    "shared_values",
]

UNIT = "GPU-Hours"  # a physical card-hour is 1 GE-hour (DESIGN §3)

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


@dataclass(frozen=True, slots=True)
class FlavorFacts:
    share_type: str = ""  # the inventory's unit kind: whole_gpu, mig_instance, time_slice_replica...
    mig_profile: str = ""


@dataclass(frozen=True, slots=True)
class FocusContext:
    billing_account_id: str = "gpuplatform"
    billing_account_name: str = "gpuplatform GPU fleet"
    provider: str = "gpuplatform"
    service_name: str = "GPU capacity"
    # 1.3 only (1.2 leaves unpriced lines out and has no x_ columns for flavors):
    currency: str = "USD"  # BillingCurrency of a line that has none (unpriced usage)
    flavors: Mapping[str, FlavorFacts] = field(default_factory=dict)
    card_flavors: Mapping[str, str] = field(default_factory=dict)  # rate card id -> flavor it prices


def _attribution(line: ExportLine) -> str:
    if line.kind == "idle":
        return "idle"
    if line.kind == "idle_share":
        return "idle_distributed"
    return "tenant" if line.tenant_id else "unassigned"


def description(line: ExportLine) -> str:
    what = f"{line.gpu_model} on {line.pool}" + (f" ({line.flavor})" if line.flavor else "")
    if line.kind == "idle":
        prefix = "Idle capacity of "
    elif line.kind == "idle_share":
        prefix = "Share of idle capacity of "
    elif line.kind == "adjustment":
        prefix = f"Late usage of {line.adjusts} for "
    else:
        prefix = f"GPU usage ({line.basis}) of "
    return ("Unpriced (no rate card): " if line.amount is None else "") + prefix + what


def shared_values(
    line: ExportLine, ctx: FocusContext, *, cost: str, price: str, currency: str
) -> dict[str, str]:
    """The columns 1.2 and 1.3 define alike, by name. ``cost``, ``price`` and ``currency`` are the
    version's (1.3 writes unpriced lines at 0 in the context's currency and moves split cents)."""
    text = sheet_text  # every field that holds text someone typed (focus_sql neutralises the same ones)
    correction = line.kind == "adjustment"
    # An adjustment is charged now for hours of the period it corrects (ChargeClass Correction).
    charge_start = line.adjusts_start if correction and line.adjusts_start else line.period_start
    charge_end = line.adjusts_end if correction and line.adjusts_end else line.period_end
    consumed = line.used_ge_hours if line.basis == "utilisation" and line.used_ge_hours is not None else None
    pool = text(line.pool)
    return {
        "BilledCost": cost,
        "BillingAccountId": ctx.billing_account_id,
        "BillingAccountName": ctx.billing_account_name,
        "BillingCurrency": text(currency),
        "BillingPeriodEnd": utc_text(line.period_end),
        "BillingPeriodStart": utc_text(line.period_start),
        "ChargeCategory": "Usage",
        "ChargeClass": "Correction" if correction else "",
        "ChargeDescription": description(line),
        "ChargePeriodEnd": utc_text(charge_end),
        "ChargePeriodStart": utc_text(charge_start),
        "ContractedCost": cost,
        "EffectiveCost": cost,
        "InvoiceIssuerName": ctx.provider,
        "ListCost": cost,
        "PricingQuantity": number_text(line.card_hours),
        "PricingUnit": UNIT,
        "ProviderName": ctx.provider,
        "PublisherName": ctx.provider,
        "ServiceCategory": "Compute",
        "ServiceName": ctx.service_name,
        "ConsumedQuantity": number_text(consumed if consumed is not None else line.card_hours),
        "ConsumedUnit": UNIT,
        "ContractedUnitPrice": price,
        "ListUnitPrice": price,
        "PricingCategory": "Standard",
        "ResourceId": pool,
        "ResourceName": pool,
        "ResourceType": "GPU node pool",
        "SkuMeter": "GPU-Hours " + (line.basis or "allocation"),
        "ChargeFrequency": "Usage-Based",
        "ServiceSubcategory": "Containers",
        "x_TenantPath": text(line.tenant_path),
        "x_CostCentre": text(line.cost_centre),
        "x_Flavor": text(line.flavor),
        "x_GpuModel": text(line.gpu_model),
        "x_Basis": text(line.basis),
        "x_LineKind": text(line.kind),
        "x_LineNumber": str(line.line_no),
        "x_GeHoursUsed": number_text(line.used_ge_hours),
        "x_AmountExact": number_text(line.amount_exact),
        "x_Adjusts": text(line.adjusts),
    }


def focus_record(line: ExportLine, ctx: FocusContext) -> list[str]:
    """A priced line as FOCUS 1.2: the shared columns, with 1.2's SKU price (the rate card), its
    tenant as the sub account and its x_ columns."""
    values = shared_values(
        line,
        ctx,
        cost=money_text(line.amount, minor_unit(line.currency)),
        price=number_text(line.unit_price),
        currency=line.currency,
    )
    tenant = bool(line.tenant_id)
    values["SkuId"] = sheet_text(line.gpu_model + (f"/{line.flavor}" if line.flavor else ""))
    values["SkuPriceId"] = sheet_text(line.rate_card)
    values["SubAccountId"] = line.tenant_id if tenant else ""
    values["SubAccountName"] = values["x_TenantPath"] if tenant else ""
    values["SubAccountType"] = "Tenant" if tenant else ""
    values["x_Attribution"] = _attribution(line)
    values["x_GeHoursAllocated"] = number_text(line.ge_hours)
    return [values[name] for name in FOCUS_COLUMNS]


def focus_chunks(lines: Iterable[ExportLine], ctx: FocusContext | None = None) -> Iterator[bytes]:
    """The FOCUS 1.2 CSV, streamed; unpriced lines left out (see the module's docstring)."""
    context = ctx or FocusContext()
    return table_chunks(
        FOCUS_COLUMNS, (focus_record(line, context) for line in lines if line.amount is not None)
    )
