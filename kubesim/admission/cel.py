"""CEL for admission expressions: cel-python, the DRA helpers' quantity()/semver(), and the Kubernetes
string and list extensions policies use most.

Error texts follow the API server's CEL filter: a runtime error is "expression '<expr>' resulted in
error: <detail>", a compile error "compilation error: <detail>". Not available: optional field syntax
(`?.`, `.orValue()`), `authorizer`, type checking against the schema (kubesim finds type errors only at
evaluation, where the real server also reports them when it writes the policy's status.typeChecking).
"""

from __future__ import annotations

import re
from typing import Any

import celpy
from celpy import celtypes

from kubesim.controllers.cel_env import FUNCTIONS as DRA_FUNCTIONS


class CelError(Exception):
    """An expression that did not compile or failed to evaluate; the message is the server's."""


def _list(values: Any) -> list[Any]:
    if not isinstance(values, celtypes.ListType):
        raise TypeError("no such overload")
    return list(values)


def _min(values: Any) -> Any:
    items = _list(values)
    if not items:
        raise ValueError("min of an empty list")
    return min(items)


def _max(values: Any) -> Any:
    items = _list(values)
    if not items:
        raise ValueError("max of an empty list")
    return max(items)


def _sum(values: Any) -> Any:
    items = _list(values)
    total: Any = celtypes.IntType(0)
    for item in items:
        total = total + item
    return total


def _find(text: Any, pattern: Any) -> celtypes.StringType:
    match = re.search(str(pattern), str(text))
    return celtypes.StringType(match.group(0) if match else "")


def _split(text: Any, sep: Any, limit: Any = None) -> celtypes.ListType:
    if limit is None or int(limit) < 0:
        parts = str(text).split(str(sep))
    else:
        parts = str(text).split(str(sep), int(limit) - 1)
    return celtypes.ListType([celtypes.StringType(p) for p in parts])


def _index_of(value: Any, sub: Any) -> celtypes.IntType:
    if isinstance(value, celtypes.ListType):
        items = list(value)
        return celtypes.IntType(items.index(sub) if sub in items else -1)
    return celtypes.IntType(str(value).find(str(sub)))


FUNCTIONS: dict[str, Any] = {
    **DRA_FUNCTIONS,
    "lowerAscii": lambda s: celtypes.StringType(str(s).lower()),
    "upperAscii": lambda s: celtypes.StringType(str(s).upper()),
    "trim": lambda s: celtypes.StringType(str(s).strip()),
    "replace": lambda s, old, new: celtypes.StringType(str(s).replace(str(old), str(new))),
    "split": _split,
    "join": lambda values, sep="": celtypes.StringType(str(sep).join(str(v) for v in _list(values))),
    "indexOf": lambda s, sub: _index_of(s, sub),
    "lastIndexOf": lambda s, sub: celtypes.IntType(str(s).rfind(str(sub))),
    "substring": lambda s, start, end=None: celtypes.StringType(
        str(s)[int(start) :] if end is None else str(s)[int(start) : int(end)]
    ),
    "find": _find,
    "findAll": lambda s, pattern: celtypes.ListType(
        [celtypes.StringType(m.group(0)) for m in re.finditer(str(pattern), str(s))]
    ),
    "isSorted": lambda values: celtypes.BoolType(_list(values) == sorted(_list(values))),
    "sum": _sum,
    "min": _min,
    "max": _max,
}


def _detail(exc: BaseException) -> str:
    """cel-go's wording for the errors policies trip over most."""
    text = str(exc.args[0]) if exc.args else str(exc)
    missing = re.match(r"no such member in mapping: '(.*)'", text)
    if missing:
        return f"no such key: {missing.group(1)}"
    if "does not support field selection" in text or "NoneType" in text:
        return "no such key"  # selecting into null, as cel-go reports for unset objects
    return text


class Programs:
    """Compiles each expression once."""

    def __init__(self) -> None:
        self._env = celpy.Environment()
        self._programs: dict[str, Any] = {}

    def evaluate(self, expression: str, activation: dict[str, Any]) -> Any:
        program = self._programs.get(expression)
        if program is None:
            try:
                program = self._env.program(self._env.compile(expression), functions=FUNCTIONS)
            except celpy.CELParseError as exc:
                raise CelError(f"compilation error: {_detail(exc)}") from exc
            self._programs[expression] = program
        try:
            result = program.evaluate(activation)
        except (celpy.CELEvalError, ValueError, TypeError, KeyError, ZeroDivisionError) as exc:
            raise CelError(f"expression '{expression}' resulted in error: {_detail(exc)}") from exc
        if isinstance(result, celpy.CELEvalError):
            raise CelError(f"expression '{expression}' resulted in error: {_detail(result)}")
        return result


def to_cel(value: Any) -> Any:
    return celpy.json_to_cel(value)


def lazy_error(message: str) -> celpy.CELEvalError:
    """A variable whose expression failed: an error value that fails whatever uses it."""
    return celpy.CELEvalError(message, ValueError, None)
