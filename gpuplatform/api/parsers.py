"""JSON bodies with a depth limit: a deeply nested array is a 400, not a RecursionError's 500."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class NestingTooDeep(ParseError):
    default_detail = "The JSON body is nested too deeply."
    default_code = "json_too_deep"


def depth_of(value: Any, limit: int) -> int:
    """Nesting depth of a decoded JSON value, iteratively (no recursion to exhaust), stopping past limit."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if deepest > limit:
                return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


class LimitedJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = settings.API_MAX_JSON_DEPTH
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise NestingTooDeep(f"The JSON body is nested deeper than {limit} levels.") from None
        except json.JSONDecodeError:
            raise ParseError("The body is not valid JSON.") from None
        if depth_of(data, limit) > limit:
            raise NestingTooDeep(f"The JSON body is nested deeper than {limit} levels.")
        return data
