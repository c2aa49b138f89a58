"""A FOCUS 1.3 Cost and Usage validator for the rules our export can break, each quoting the rule it
checks from the 1.3 publication text (FOCUS_Spec 4f52032efbf4, specification/). Pure: CSV text in,
a list of violations out. Not a general validator: the Conditional columns it checks are the ones
the export writes; a rule about a column absent from the file is skipped, as the spec skips it.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import defaultdict
from collections.abc import Callable
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation

Row = dict[str, str]

MANDATORY = (
    "BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency", "BillingPeriodEnd",
    "BillingPeriodStart", "ChargeCategory", "ChargeClass", "ChargeDescription", "ChargePeriodEnd",
    "ChargePeriodStart", "ContractedCost", "EffectiveCost", "HostProviderName", "InvoiceIssuerName",
    "ListCost", "PricingQuantity", "PricingUnit", "ProviderName", "PublisherName", "ServiceCategory",
    "ServiceName", "ServiceProviderName",
)  # fmt: skip
NOT_NULL = (
    "BilledCost", "BillingAccountId", "BillingCurrency", "BillingPeriodEnd", "BillingPeriodStart",
    "ChargeCategory", "ChargePeriodEnd", "ChargePeriodStart", "ContractedCost", "EffectiveCost",
    "InvoiceIssuerName", "ListCost", "ProviderName", "PublisherName", "ServiceCategory", "ServiceName",
    "ServiceProviderName",
)  # fmt: skip
DECIMALS = (
    "BilledCost", "ContractedCost", "EffectiveCost", "ListCost", "PricingQuantity", "ConsumedQuantity",
    "ListUnitPrice", "ContractedUnitPrice",
)  # fmt: skip
DATETIMES = ("BillingPeriodEnd", "BillingPeriodStart", "ChargePeriodEnd", "ChargePeriodStart")
COSTS = ("BilledCost", "ContractedCost", "EffectiveCost", "ListCost")
# FOCUS-defined dimension columns an allocated row must share with its origin (x_ columns are the
# data generator's; the Allocated* columns are what the split adds).
DIMENSIONS = (
    "BillingAccountId", "BillingAccountName", "BillingCurrency", "BillingPeriodEnd", "BillingPeriodStart",
    "ChargeCategory", "ChargeClass", "ChargePeriodEnd", "ChargePeriodStart", "HostProviderName",
    "InvoiceIssuerName", "PricingCategory", "PricingUnit", "ProviderName", "PublisherName", "ResourceId",
    "ResourceName", "ResourceType", "ServiceCategory", "ServiceName", "ServiceProviderName",
    "ServiceSubcategory", "SkuId", "SkuMeter", "SkuPriceDetails", "SkuPriceId", "SubAccountId",
    "SubAccountName", "SubAccountType", "ChargeFrequency", "ConsumedUnit", "ListUnitPrice",
    "ContractedUnitPrice",
)  # fmt: skip
CHARGE_CATEGORIES = ("Usage", "Purchase", "Tax", "Credit", "Adjustment")
SKU_PRICE_PROPERTIES = (
    "CoreCount", "DiskMaxIops", "DiskSpace", "DiskType", "GpuCount", "InstanceType", "InstanceSeries",
    "MemorySize", "NetworkMaxIops", "NetworkMaxThroughput", "OperatingSystem", "Redundancy", "StorageClass",
)  # fmt: skip
ALLOCATION_PROPERTIES = ("AllocatedRatio", "UsageUnit", "UsageQuantity")
MINOR_UNITS = {"JPY": 0, "KRW": 0, "BHD": 3, "KWD": 3}
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$")
_PASCAL = re.compile(r"^[A-Z][A-Za-z0-9]*$")


def validate(text: str, *, origin_of: Callable[[Row], str] | None = None) -> list[str]:
    """Every violation found in the CSV ``text``, as "rule: row n: detail". ``origin_of`` names an
    allocated row's origin charge (the file's own link column), for the split allocation rules."""
    reader = csv.DictReader(io.StringIO(text))
    columns = list(reader.fieldnames or [])
    rows = list(reader)
    problems: list[str] = []
    _columns(columns, problems)
    for n, row in enumerate(rows, start=2):  # line 1 is the header
        _row(n, row, columns, problems)
    _sku_price_parents(rows, problems)
    if origin_of is not None and "AllocatedMethodId" in columns:
        _split_allocation(rows, origin_of, problems)
    return problems


def _columns(columns: list[str], problems: list[str]) -> None:
    for name in MANDATORY:
        if name not in columns:
            problems.append(f"'{name} MUST be present in a Cost and Usage FOCUS dataset.'")
    for name in columns:
        if name.startswith("x_"):
            continue
        if not _PASCAL.match(name):
            problems.append(
                f"'Custom columns MUST be prefixed with a consistent `x_` prefix' / "
                f"'Column IDs MUST use Pascal case': {name}"
            )
    if "AllocatedMethodId" in columns:
        for name in ("AllocatedResourceId", "AllocatedResourceName", "AllocatedTags"):
            if name not in columns:
                problems.append(
                    "'A FOCUS dataset MUST include the following columns when the data generator "
                    f"supports data generator-calculated split cost allocation': {name}"
                )


def _decimal(value: str) -> Decimal | None:
    try:
        return Decimal(value) if value and _NUMBER.match(value) else None
    except InvalidOperation:
        return None


def _row(n: int, row: Row, columns: list[str], problems: list[str]) -> None:
    def bad(rule: str, detail: str = "") -> None:
        problems.append(f"{rule}: row {n}" + (f": {detail}" if detail else ""))

    def null(name: str) -> bool:
        return row.get(name, "") == ""

    for name in NOT_NULL:
        if name in columns and null(name):
            bad(f"'{name} MUST NOT be null.'")
    for name in DECIMALS:
        if name in columns and not null(name) and _decimal(row[name]) is None:
            bad(f"'{name} MUST conform to NumericFormat requirements.'", row[name])
    for name in DATETIMES:
        if name in columns and not null(name) and not _DATETIME.match(row[name]):
            bad(f"'{name} MUST conform to DateTimeFormat requirements.'", row[name])
    if "BillingCurrency" in columns and not re.fullmatch(r"[A-Z]{3}", row["BillingCurrency"]):
        bad("'BillingCurrency MUST conform to CurrencyFormat requirements.'", row["BillingCurrency"])
    if row.get("ChargeCategory") and row["ChargeCategory"] not in CHARGE_CATEGORIES:
        bad("'ChargeCategory MUST be one of the allowed values.'", row["ChargeCategory"])
    if not null("ChargeClass") and row["ChargeClass"] != "Correction":
        bad("'ChargeClass MUST be \"Correction\" when ChargeClass is not null.'", row["ChargeClass"])
    usage = row.get("ChargeCategory") in ("Usage", "Purchase") and null("ChargeClass")
    for name in ("SkuId", "SkuPriceId", "ListUnitPrice", "ContractedUnitPrice", "PricingQuantity"):
        if name in columns and usage and null(name):
            bad(f"'{name} MUST NOT be null when ChargeCategory is \"Usage\" or \"Purchase\" and "
                "ChargeClass is not \"Correction\".'")  # fmt: skip
    if "SkuPriceId" in columns:
        for name in ("ListUnitPrice", "ContractedUnitPrice", "PricingQuantity", "ConsumedQuantity"):
            if name in columns and null("SkuPriceId") and not null(name):
                bad(f"'{name} MUST be null when SkuPriceId is null.'")
        for name in ("ListUnitPrice", "ContractedUnitPrice"):
            if name in columns and not null("SkuPriceId") and null(name):
                bad(f"'{name} MUST NOT be null when SkuPriceId is not null.'")
    if "SkuPriceDetails" in columns:
        if null("SkuPriceId") and not null("SkuPriceDetails"):
            bad("'SkuPriceDetails MUST be null when SkuPriceId is null.'")
        if not null("SkuPriceDetails"):
            details = _key_values(row["SkuPriceDetails"], "SkuPriceDetails", bad)
            for key in details or {}:
                if key not in SKU_PRICE_PROPERTIES and not key.startswith("x_"):
                    bad("'Property key MUST begin with the string \"x_\" unless it is a FOCUS-defined "
                        "property.'", key)  # fmt: skip
    if (
        "ConsumedQuantity" in columns
        and usage
        and row.get("ChargeCategory") == "Usage"
        and null("ConsumedQuantity")
    ):
        bad("'ConsumedQuantity MUST NOT be null when ChargeClass is not \"Correction\".'")
    for cost, price in (("ListCost", "ListUnitPrice"), ("ContractedCost", "ContractedUnitPrice")):
        _product(row, cost, price, bad)
    if not null("HostProviderName") and row.get("HostProviderName") != row.get("ServiceProviderName"):
        bad("'HostProviderName MUST equal ServiceProviderName in all other cases.'")
    _allocation_row(row, columns, bad)


def _product(row: Row, cost: str, price: str, bad: Callable[[str, str], None]) -> None:
    """'ListCost MUST equal the product of ListUnitPrice and PricingQuantity when ListUnitPrice is
    not null and PricingQuantity is not null.' A cost is money, written to the currency's minor
    unit: equal to that unit (within one, the cent a split's exact sum may move)."""
    amount, unit, quantity = (_decimal(row.get(c, "")) for c in (cost, price, "PricingQuantity"))
    if amount is None or unit is None or quantity is None:
        return
    step = Decimal(1).scaleb(-MINOR_UNITS.get(row.get("BillingCurrency", ""), 2))
    if abs(amount - unit * quantity) > step:
        bad(
            f"'{cost} MUST equal the product of {price} and PricingQuantity'",
            f"{amount} vs {unit * quantity}",
        )


def _key_values(text: str, column: str, bad: Callable[..., None]) -> dict[str, object] | None:
    """'Key-Value Format columns MUST contain a serialized JSON string, consistent with the ECMA 404
    definition of an object.' 'Values in a key-value pair MUST NOT be an object or an array.'"""
    try:
        value = json.loads(text, parse_float=Decimal)
    except ValueError:
        bad(f"'Key-Value Format columns MUST contain a serialized JSON string' ({column})", text)
        return None
    if not isinstance(value, dict):
        bad(f"'Key-Value Format columns MUST contain ... an object' ({column})", text)
        return None
    for key, item in value.items():
        if isinstance(item, dict | list):
            bad(f"'Values in a key-value pair MUST NOT be an object or an array.' ({column})", key)
    return value


def _allocation_row(row: Row, columns: list[str], bad: Callable[..., None]) -> None:
    if "AllocatedMethodId" not in columns:
        return
    split = row["AllocatedMethodId"] != ""
    if not split:
        for name in ("AllocatedMethodDetails", "AllocatedTags", "AllocatedResourceId"):
            if row.get(name):
                bad(f"'{name} MUST be null when a charge is not related to a data generator-calculated "
                    "split cost allocation.'")  # fmt: skip
    if (row.get("AllocatedResourceId", "") == "") != (row.get("AllocatedResourceName", "") == ""):
        bad("'AllocatedResourceName MUST be null when AllocatedResourceId is null.' / "
            "'AllocatedResourceName MUST NOT be null when AllocatedResourceId is not null.'")  # fmt: skip
    if row.get("AllocatedTags"):
        _key_values(row["AllocatedTags"], "AllocatedTags", bad)
    if not row.get("AllocatedMethodDetails"):
        return
    try:
        details = json.loads(row["AllocatedMethodDetails"], parse_float=Decimal)
    except ValueError:
        bad("'AllocatedMethodDetails MUST conform to JsonObjectFormat requirements.'")
        return
    elements = details.get("Elements") if isinstance(details, dict) else None
    if not isinstance(elements, list):
        bad("'AllocatedMethodDetails MUST have a top-level key \"Elements\" which contains an array.'")
        return
    for element in elements:
        if not isinstance(element, dict):
            bad("'Each item in \"Elements\" MUST be an object.'")
            continue
        if "AllocatedRatio" not in element:
            bad('\'"AllocatedRatio" MUST be included inside each "Elements" object.\'')
        elif not isinstance(element["AllocatedRatio"], Decimal | int):
            bad("'Values for \"AllocatedRatio\" MUST be a decimal value compatible with NumericFormat'")
        if "UsageQuantity" in element and "UsageUnit" not in element:
            bad("'\"UsageUnit\" MUST be included inside an \"Elements\" object if \"UsageQuantity\" "
                "allocation property is included in that \"Elements\" object'")  # fmt: skip
        for key in element:
            if key not in ALLOCATION_PROPERTIES and not key.startswith("x_"):
                bad("'Allocation property keys MUST begin with the string \"x_\" unless it is a "
                    "FOCUS-defined allocation property.'", key)  # fmt: skip


def _sku_price_parents(rows: list[Row], problems: list[str]) -> None:
    """'SkuPriceId MUST have one and only one parent SkuId.'"""
    parents: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        if row.get("SkuPriceId"):
            parents[row["SkuPriceId"]].add(row.get("SkuId", ""))
    for price, skus in sorted(parents.items()):
        if len(skus) != 1:
            problems.append(
                f"'SkuPriceId MUST have one and only one parent SkuId.': {price} -> {sorted(skus)}"
            )


def _split_allocation(rows: list[Row], origin_of: Callable[[Row], str], problems: list[str]) -> None:
    """Per origin charge: ratios sum to 1, allocated rows share the origin's dimensions, and their
    costs sum to the origin's (its PricingQuantity x unit price, rounded once to the minor unit)."""
    origins: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        if row.get("AllocatedMethodId"):
            origins[origin_of(row)].append(row)
    for origin, members in sorted(origins.items()):
        ratios = []
        for row in members:
            details = json.loads(row["AllocatedMethodDetails"], parse_float=Decimal)
            ratios.append(sum((Decimal(e["AllocatedRatio"]) for e in details["Elements"]), Decimal(0)))
        if sum(ratios, Decimal(0)) != 1:
            problems.append(
                '\'Values for all "AllocatedRatio" properties across all allocated charges related to '
                f"a single origin charge MUST sum up to 1 (100%).': {origin} sums to {sum(ratios)}"
            )
        for name in DIMENSIONS:
            if name in members[0] and len({row[name] for row in members}) != 1:
                problems.append(
                    "'For each allocated charge records in a FOCUS dataset, all dimension columns and "
                    f"non-aggregatable metric columns MUST match the values of the origin charge "
                    f"record.': {origin}: {name}"
                )
        quantity = sum((Decimal(row["PricingQuantity"]) for row in members), Decimal(0))
        unit = _decimal(members[0].get("ListUnitPrice", ""))
        if unit is None:
            continue
        places = MINOR_UNITS.get(members[0]["BillingCurrency"], 2)
        origin_cost = (quantity * unit).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN)
        for cost in COSTS:
            total = sum((Decimal(row[cost]) for row in members), Decimal(0))
            if total != origin_cost:
                problems.append(
                    "'Allocated charge records in a FOCUS dataset MUST sum up to the origin charge "
                    f"record for all aggregatable metric columns.': {origin}: {cost} {total} != {origin_cost}"
                )
