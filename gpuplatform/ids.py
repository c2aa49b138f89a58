"""Telling an id from a name where a route or a request accepts either."""

from __future__ import annotations

import uuid


def is_uuid(text: str) -> bool:
    """Whether ``text`` reads as a UUID (the form an object's id takes), in any of uuid.UUID's spellings."""
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True
