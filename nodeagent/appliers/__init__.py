"""Appliers turn a verified bundle into the node's configuration. Each raises ApplyFailed with a
stable code; none runs anything the bundle carries."""

from __future__ import annotations


class ApplyFailed(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
