"""Defensive readers for decoded Kubernetes objects (dicts from JSON/YAML or `to_dict()` output).

Cluster objects are untrusted input: any field may be missing, null or of the wrong type. These helpers
turn "wrong shape" into a default instead of a KeyError/TypeError deep inside a parser.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["as_int", "as_list", "as_map", "as_str", "dig"]


# Decoded JSON is made of plain dicts and lists: those are answered before the ABC checks below
# (``isinstance`` against ``Mapping``/``Sequence`` goes through ``ABCMeta.__instancecheck__``, ~3 % of
# a cold sync at millions of calls). Other mappings and sequences still get the same answer.


def as_map(value: object) -> Mapping[str, Any]:
    if type(value) is dict:
        return value
    if value is None:  # a field left out: the commonest answer that is not a dict
        return {}
    return value if isinstance(value, Mapping) else {}


def as_list(value: object) -> Sequence[Any]:
    if type(value) is list:
        return value
    # A str is a Sequence too; it is never the list a Kubernetes field means.
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return value
    return ()


def as_str(value: object, default: str = "") -> str:
    return value if isinstance(value, str) else default


def as_int(value: object) -> int | None:
    """An int from an int or a decimal string ("7" in labels); None otherwise (bools excluded)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("+-").isdigit():
            return int(text)
    return None


def dig(obj: object, *path: str) -> Any:
    """obj[path[0]][path[1]]... or None as soon as a level is missing or not a mapping."""
    current: Any = obj
    for key in path:
        if type(current) is not dict and not isinstance(current, Mapping):
            return None
        current = current.get(key)
    return current
