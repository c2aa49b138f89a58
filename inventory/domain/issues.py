"""Typed parse problems collected next to what did parse, so a sync can count them per cluster.

Parsers in this package never raise on bad cluster data: a garbage annotation on one node must not stop
the inventory of the other 4,999. They return what they could read plus a tuple of `ParseIssue`s.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["IssueSeverity", "ParseIssue", "error", "warning"]


class IssueSeverity(StrEnum):
    # WARNING: the value was read with an assumption (a default, an alias, an inferred count).
    WARNING = "warning"
    # ERROR: part of the input could not be read and was left out of the result.
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class ParseIssue:
    severity: IssueSeverity
    code: str  # stable, dotted, for counting and alerting: "hami.register.truncated"
    message: str  # for humans; quotes the offending value (shortened)
    source: str = ""  # where: "label nvidia.com/gpu.count", "annotation hami.io/node-nvidia-register"


def warning(code: str, message: str, *, source: str = "") -> ParseIssue:
    return ParseIssue(IssueSeverity.WARNING, code, message, source)


def error(code: str, message: str, *, source: str = "") -> ParseIssue:
    return ParseIssue(IssueSeverity.ERROR, code, message, source)


def shorten(value: object, *, limit: int = 80) -> str:
    """repr() of a value cut to `limit` characters: issue messages end up in logs and the UI."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
