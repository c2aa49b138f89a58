"""resource.Quantity as the API server stores it: parsed, then written back in canonical form.

k8s.io/apimachinery/pkg/api/resource: a quantity keeps its format (binary `Ki…Ei`, decimal SI
`n u m "" k M G T P E`, or decimal exponent `e3`) and is written with the largest suffix that keeps the
mantissa an integer (`81920Mi` → `80Gi`, `1000m` → `1`, `1000` → `1k`). Binary values below 1024 or
with a fraction are written as decimal SI; precision finer than nano is rounded up. A string that is
no quantity is refused while decoding the body (400), with the real regular expression in the message.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, InvalidOperation, localcontext
from typing import Any

from kubesim import schema
from kubesim.errors import bad_request

QUANTITY_DEF = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_SHAPE = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_NUMBER = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)$")
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {v: k for k, v in _DECIMAL.items()}
_NANO = Decimal("1e-9")

SHAPE_MESSAGE = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


class QuantityError(ValueError):
    pass


def parse(text: str) -> tuple[Decimal, str]:
    """(value, format) with format "BinarySI", "DecimalSI" or "DecimalExponent"."""
    match = _SHAPE.match(text)
    if not match or not _NUMBER.match(match[1]):
        raise QuantityError(SHAPE_MESSAGE)
    number, suffix = match[1], match[2]
    with localcontext() as context:
        context.prec = 60
        try:
            value = Decimal(number)
        except InvalidOperation as exc:  # pragma: no cover - the regular expressions exclude it
            raise QuantityError(SHAPE_MESSAGE) from exc
        if suffix in _BINARY:
            return value * (1 << _BINARY[suffix]), "BinarySI"
        if suffix in _DECIMAL:
            return value.scaleb(_DECIMAL[suffix]), "DecimalSI"
        if suffix[:1] in ("e", "E") and re.fullmatch(r"[-+]?[0-9]+", suffix[1:]):
            return value.scaleb(int(suffix[1:])), "DecimalExponent"
    raise QuantityError("unable to parse quantity's suffix")


def canonical(text: str) -> str:
    value, form = parse(text)
    with localcontext() as context:
        context.prec = 60
        sign = "-" if value < 0 else ""
        magnitude = abs(value)
        # Finer than nano is rounded up, away from zero (Quantity's infDec rounding).
        if magnitude != magnitude.quantize(_NANO, rounding=ROUND_FLOOR):
            magnitude = magnitude.quantize(_NANO, rounding=ROUND_CEILING)
        if magnitude == 0:
            return "0"
        if form == "BinarySI" and (magnitude < 1024 or magnitude != magnitude.to_integral_value()):
            form = "DecimalSI"
        if form == "BinarySI":
            whole = int(magnitude)
            shift = 0
            while shift < 60 and whole % (1 << (shift + 10)) == 0:
                shift += 10
            suffix = next(k for k, v in _BINARY.items() if v == shift) if shift else ""
            return f"{sign}{whole >> shift}{suffix}"
        exponent = -9
        while exponent < 18 and (magnitude.scaleb(-(exponent + 3)) % 1) == 0:
            exponent += 3
        mantissa = int(magnitude.scaleb(-exponent))
        if form == "DecimalExponent":
            return f"{sign}{mantissa}" + (f"e{exponent}" if exponent else "")
        return f"{sign}{mantissa}{_DECIMAL_SUFFIX[exponent]}"


def canonicalize(kind: str, version: str, value: Any, sch: schema.Schema, *, strict: bool = True) -> Any:
    """`value` with every Quantity-typed field in canonical form; 400 for one that is no quantity
    (strict=False, the Python API's validate=False: kept as written, as a broken writer could store)."""
    if sch.get("$ref", "").endswith(QUANTITY_DEF):
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            return value  # a type error: schema validation answers it
        try:
            return canonical(str(value))
        except QuantityError as exc:
            if not strict:
                return value
            raise bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: {exc}') from exc
    resolved = schema.resolve(sch)
    if isinstance(value, dict) and not schema.is_open(resolved):
        for key, child in value.items():
            child_schema = schema.property_schema(resolved, key)
            if child_schema is not None and child is not None:
                value[key] = canonicalize(kind, version, child, child_schema, strict=strict)
    elif isinstance(value, list) and "items" in resolved:
        for i, item in enumerate(value):
            value[i] = canonicalize(kind, version, item, resolved["items"], strict=strict)
    return value
