"""Byte-stable text of compiled Kueue objects: keys sorted, one document per object, in apply order.

The same catalogue always renders to the same bytes, so a golden file, a diff in review and the
drift check compare text, not structures.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import yaml


def to_yaml(objects: Iterable[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(
        list(objects), sort_keys=True, default_flow_style=False, explicit_start=True, width=120
    )


def to_json(objects: Iterable[dict[str, Any]]) -> str:
    return json.dumps(list(objects), sort_keys=True, indent=2, ensure_ascii=False) + "\n"
