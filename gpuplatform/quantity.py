"""The one Kubernetes quantity parser (DESIGN §3): "40Gi", "500m", "81920Mi", "1e3", "8k".

Pure, no Django. Values are exact `Decimal`s: Kubernetes itself never uses floats for quantities,
and GPU memory figures (81559 MiB) must round-trip without drift.

Grammar (k8s.io/apimachinery resource.Quantity):
    <quantity> ::= <sign>? <number> <suffix>
    <number>   ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
    <suffix>   ::= binarySI (Ki Mi Gi Ti Pi Ei) | decimalSI (n u m "" k M G T P E) | e<signed> | E<signed>
"n" and "u" are not in the documented grammar but the Go parser accepts them, and real objects carry them.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache

__all__ = [
    "MIB",
    "QuantityError",
    "format_binary",
    "format_decimal",
    "parse_quantity",
    "to_mib",
    "to_mib_int",
]

MIB = Decimal(1024 * 1024)

_BINARY_SUFFIXES: dict[str, Decimal] = {
    "Ki": Decimal(1024),
    "Mi": Decimal(1024**2),
    "Gi": Decimal(1024**3),
    "Ti": Decimal(1024**4),
    "Pi": Decimal(1024**5),
    "Ei": Decimal(1024**6),
}
_DECIMAL_SUFFIXES: dict[str, Decimal] = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    # "E" alone is exa; "E3" is an exponent. The Go parser tries the suffix table first, so do we.
    "E": Decimal("1e18"),
}

# Number then everything else; the suffix is validated separately so errors can say which part is wrong.
_QUANTITY_RE = re.compile(r"^(?P<number>[+-]?(?:\d+\.?\d*|\.\d+))(?P<suffix>.*)$")
_EXPONENT_RE = re.compile(r"^[eE](?P<exp>[+-]?\d+)$")
# Kubernetes caps quantities at 2^63-1 in magnitude; far larger exponents are garbage, not data.
_MAX_EXPONENT = 30


class QuantityError(ValueError):
    """A value is not a Kubernetes quantity. The message quotes the offending input."""


def parse_quantity(value: str | int | Decimal) -> Decimal:
    """Parse a Kubernetes quantity into an exact Decimal in base units ("40Gi" -> 42949672960).

    Accepts the ints and Decimals YAML/JSON decoders produce for unquoted numbers. Floats and bools
    are refused: a float has already lost the exact value, and YAML `true` is never a quantity.
    """
    if isinstance(value, bool):
        raise QuantityError(f"not a quantity: {value!r} (a boolean)")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise QuantityError(f"not a quantity: {value!r} (not finite)")
        return value
    if not isinstance(value, str):
        raise QuantityError(f"not a quantity: {value!r} (type {type(value).__name__})")
    return _parse_text(value)


# A cluster repeats the same few quantities ("80Gi", "1", "7") across hundreds of thousands of
# devices and containers; Decimals are immutable, so one parse per distinct text serves them all.
@lru_cache(maxsize=4096)
def _parse_text(value: str) -> Decimal:
    match = _QUANTITY_RE.match(value)
    if match is None:
        raise QuantityError(f"not a quantity: {value!r} (no leading number)")
    try:
        number = Decimal(match["number"])
    except InvalidOperation as exc:  # pragma: no cover - the regex only lets valid numbers through
        raise QuantityError(f"not a quantity: {value!r} (bad number)") from exc
    return number * _multiplier(match["suffix"], original=value)


def _multiplier(suffix: str, *, original: str) -> Decimal:
    if suffix in _BINARY_SUFFIXES:
        return _BINARY_SUFFIXES[suffix]
    if suffix in _DECIMAL_SUFFIXES:
        return _DECIMAL_SUFFIXES[suffix]
    exponent = _EXPONENT_RE.match(suffix)
    if exponent is not None:
        exp = int(exponent["exp"])
        if abs(exp) > _MAX_EXPONENT:
            raise QuantityError(f"not a quantity: {original!r} (exponent {exp} out of range)")
        return Decimal(1).scaleb(exp)
    raise QuantityError(f"not a quantity: {original!r} (unknown suffix {suffix!r})")


def to_mib(value: str | int | Decimal) -> Decimal:
    """A byte quantity in MiB, exact ("40Gi" -> 40960, "1G" -> 953.67431640625)."""
    return parse_quantity(value) / MIB


def to_mib_int(value: str | int | Decimal) -> int:
    """A byte quantity in whole MiB, rounded down: GPU memory is reported and compared in whole MiB."""
    return int(to_mib(value))


def format_binary(value: Decimal | int) -> str:
    """Canonical binary form, the largest suffix that divides exactly (42949672960 -> "40Gi").

    Values that are not a whole number of bytes fall back to `format_decimal` (Kubernetes does the same).
    """
    amount = Decimal(value)
    if amount != amount.to_integral_value():
        return format_decimal(amount)
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        scaled = amount / _BINARY_SUFFIXES[suffix]
        if amount != 0 and scaled == scaled.to_integral_value():
            return f"{int(scaled)}{suffix}"
    return str(int(amount))


def format_decimal(value: Decimal | int) -> str:
    """Canonical decimal-SI form with no fractional digits (1.5 -> "1500m", 8000 -> "8k")."""
    amount = Decimal(value)
    if amount == 0:
        return "0"
    for suffix in ("E", "P", "T", "G", "M", "k", "", "m", "u", "n"):
        scaled = amount / _DECIMAL_SUFFIXES[suffix]
        if scaled == scaled.to_integral_value():
            return f"{int(scaled)}{suffix}"
    # Below a nano-unit Kubernetes rounds up; we only format, so say so rather than lose precision.
    raise QuantityError(f"cannot format {value!r} without losing precision")
