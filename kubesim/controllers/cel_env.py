"""CEL for DRA selectors: cel-python plus the Kubernetes extension functions DRA expressions use.

A selector sees one variable, `device`, with `driver`, `attributes` and `capacity`; attributes and
capacity are maps keyed by domain ("gpu.nvidia.com") then by name, so that
`device.attributes['gpu.nvidia.com'].profile` and `device.capacity['gpu.nvidia.com'].memory` work.
Unqualified attribute names of a slice belong to the driver's domain; "resource.kubernetes.io/pciBusID"
belongs to "resource.kubernetes.io".

Kubernetes extensions registered here: quantity() with compareTo/isGreaterThan/isLessThan/add/sub/
asInteger/asApproximateFloat/isInteger/sign, semver() with compareTo/isGreaterThan/isLessThan/
major/minor/patch, and isQuantity/isSemver. As in the real scheduler, an evaluation error (for example
"no such key" on a missing attribute) means the device does not match, and the error is reported.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any, cast

import celpy
from celpy import celtypes

from kubesim.scenarios.quantity import parse_quantity

_SEMVER = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


class Quantity(celtypes.IntType):
    """A resource.Quantity: stored as milli-units so equal quantities ("1Gi", "1024Mi") compare equal."""

    def __new__(cls, text: Any) -> Quantity:
        # Sub-milli precision ("1n") rounds, as Quantity's MilliValue does.
        return cast(Quantity, super().__new__(cls, round(parse_quantity(str(text)) * 1000)))

    @property
    def fraction(self) -> Fraction:
        return Fraction(int(self), 1000)


class Semver(celtypes.StringType):
    """A semantic version; compares by (major, minor, patch, pre-release rules)."""

    def __new__(cls, text: Any) -> Semver:
        match = _SEMVER.match(str(text))
        if not match:
            raise ValueError(f"invalid semver: {text!r}")
        return cast(Semver, super().__new__(cls, str(text).removeprefix("v")))

    @property
    def key(self) -> tuple[int, int, int, int, str]:
        match = _SEMVER.match(str(self))
        assert match is not None
        major, minor, patch, pre = match.groups()
        # A pre-release sorts before its release.
        return int(major), int(minor), int(patch), 0 if pre else 1, pre or ""


def _compare(left: Any, right: Any) -> int:
    if isinstance(left, Semver) and isinstance(right, Semver):
        a: Any = left.key
        b: Any = right.key
    elif isinstance(left, Quantity) and isinstance(right, Quantity):
        a, b = int(left), int(right)
    else:
        raise celpy.CELEvalError("no such overload: compareTo", TypeError, None)
    return (a > b) - (a < b)


def _quantity(text: Any) -> Quantity:
    return Quantity(str(text))


def _semver(text: Any) -> Semver:
    return Semver(str(text))


def _from_milli(milli: int) -> Quantity:
    instance = celtypes.IntType.__new__(Quantity, milli)
    return instance  # type: ignore[return-value]


FUNCTIONS: dict[str, Any] = {
    "quantity": _quantity,
    "semver": _semver,
    "isQuantity": lambda text: celtypes.BoolType(_parses(_quantity, text)),
    "isSemver": lambda text: celtypes.BoolType(_parses(_semver, text)),
    "compareTo": lambda a, b: celtypes.IntType(_compare(a, b)),
    "isGreaterThan": lambda a, b: celtypes.BoolType(_compare(a, b) > 0),
    "isLessThan": lambda a, b: celtypes.BoolType(_compare(a, b) < 0),
    "add": lambda a, b: _from_milli(int(a) + (int(b) if isinstance(b, Quantity) else int(b) * 1000)),
    "sub": lambda a, b: _from_milli(int(a) - (int(b) if isinstance(b, Quantity) else int(b) * 1000)),
    "asInteger": lambda q: celtypes.IntType(int(q) // 1000),
    "asApproximateFloat": lambda q: celtypes.DoubleType(int(q) / 1000),
    "isInteger": lambda q: celtypes.BoolType(int(q) % 1000 == 0),
    "sign": lambda q: celtypes.IntType((int(q) > 0) - (int(q) < 0)),
    "major": lambda v: celtypes.IntType(v.key[0]),
    "minor": lambda v: celtypes.IntType(v.key[1]),
    "patch": lambda v: celtypes.IntType(v.key[2]),
}


def _parses(fn: Any, text: Any) -> bool:
    try:
        fn(text)
    except ValueError:
        return False
    return True


def _attribute_value(value: dict[str, Any]) -> Any:
    if "string" in value:
        return celtypes.StringType(value["string"])
    if "int" in value:
        return celtypes.IntType(value["int"])
    if "bool" in value:
        return celtypes.BoolType(value["bool"])
    if "version" in value:
        return Semver(value["version"])
    raise ValueError(f"unknown attribute value {value!r}")


def device_activation(driver: str, device: dict[str, Any]) -> dict[str, Any]:
    """The `device` variable for one ResourceSlice device of `driver`."""
    attributes: dict[str, dict[str, Any]] = {}
    for name, value in (device.get("attributes") or {}).items():
        domain, _, short = name.rpartition("/")
        attributes.setdefault(domain or driver, {})[short] = _attribute_value(value)
    capacity: dict[str, dict[str, Any]] = {}
    for name, value in (device.get("capacity") or {}).items():
        domain, _, short = name.rpartition("/")
        capacity.setdefault(domain or driver, {})[short] = Quantity(value["value"])
    return {
        "device": celtypes.MapType(
            {
                celtypes.StringType("driver"): celtypes.StringType(driver),
                celtypes.StringType("attributes"): _map_of_maps(attributes),
                celtypes.StringType("capacity"): _map_of_maps(capacity),
            }
        )
    }


def _map_of_maps(values: dict[str, dict[str, Any]]) -> celtypes.MapType:
    return celtypes.MapType(
        {
            celtypes.StringType(domain): celtypes.MapType(
                {celtypes.StringType(k): v for k, v in inner.items()}
            )
            for domain, inner in values.items()
        }
    )


class SelectorEvaluator:
    """Compiles each expression once; `matches` answers (matched, error message)."""

    def __init__(self) -> None:
        self._env = celpy.Environment()
        self._programs: dict[str, Any] = {}

    def program(self, expression: str) -> Any:
        program = self._programs.get(expression)
        if program is None:
            program = self._env.program(self._env.compile(expression), functions=FUNCTIONS)
            self._programs[expression] = program
        return program

    def matches(self, expression: str, activation: dict[str, Any]) -> tuple[bool, str | None]:
        try:
            result = self.program(expression).evaluate(activation)
        except (celpy.CELParseError, celpy.CELEvalError, ValueError, TypeError, KeyError) as exc:
            return False, f"CEL runtime error: {exc}"
        if isinstance(result, celpy.CELEvalError):
            return False, f"CEL runtime error: {result.args[0] if result.args else result}"
        if not isinstance(result, celtypes.BoolType):
            return False, "CEL result is not a boolean"
        return bool(result), None
