"""Request and response values passed between the HTTP server and the API layer."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kubesim.errors import ApiError


@dataclass(slots=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names
    body: bytes = b""
    # Set by the server for watches: True once the client has gone away.
    client_gone: Callable[[], bool] = field(default=lambda: False)
    # Set by the API once the bearer token is authenticated (kubesim.authn.UserInfo).
    user: Any = None

    def flag(self, name: str) -> bool:
        return self.query.get(name, "").lower() in ("1", "true", "yes")

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "application/json").split(";")[0].strip().lower()


@dataclass(slots=True)
class Response:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    # A streamed body (watch): chunks are written as they come; a None chunk means "cut the connection
    # without the terminating chunk" (a dropped stream).
    stream: Iterator[bytes | None] | None = None
    content_type: str = "application/json"


def json_response(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(status, json.dumps(obj, separators=(",", ":")).encode(), headers or {})


def error_response(err: ApiError) -> Response:
    headers = dict(err.headers)
    return json_response(err.to_status(), err.status, headers)
