"""Kubernetes resource quantities ("500m", "40Gi", "8k", "1e3"), parsed exactly.

kubesim imports nothing of the service, so it carries its own small parser instead of the project's
shared helper. Values are Fractions: "0.5" and "500m" compare equal and nothing is lost to floats.
"""

from __future__ import annotations

import re
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1)}
_DECIMAL.update({"k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12)})
_DECIMAL.update({"P": Fraction(10**15), "E": Fraction(10**18)})
_PATTERN = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE]?)$")


def parse_quantity(text: str | int | float) -> Fraction:
    """The value of a quantity; raises ValueError on malformed input, as the API server rejects it."""
    if isinstance(text, int | float):
        return Fraction(text)
    match = _PATTERN.match(text.strip())
    if not match:
        raise ValueError(f"quantities must match the regular expression: {text!r}")
    number, suffix = match.groups()
    value = Fraction(number)
    if suffix in _BINARY:
        return value * _BINARY[suffix]
    if suffix[:1] in ("e", "E"):
        return value * Fraction(10) ** int(suffix[1:])
    return value * _DECIMAL[suffix]


def quantity_int(text: str | int | float) -> int:
    """Whole-unit value, rounded up like resource.Quantity.Value()."""
    value = parse_quantity(text)
    return -((-value.numerator) // value.denominator)


def quantity_milli(text: str | int | float) -> int:
    """Milli-units, rounded up like resource.Quantity.MilliValue(): how CPU is compared."""
    value = parse_quantity(text) * 1000
    return -((-value.numerator) // value.denominator)
