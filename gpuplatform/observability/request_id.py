"""A request id for every request: echoed in X-Request-ID, stamped on audit events and problems."""

from __future__ import annotations

import contextvars
import re
import uuid
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

_current: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")
# A caller's id is kept only if it is short and tame: it ends up in logs and the audit table.
_ACCEPTABLE = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


def current_request_id() -> str:
    return _current.get()


class RequestIdMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.headers.get("X-Request-ID", "")
        request_id = incoming if _ACCEPTABLE.match(incoming) else uuid.uuid4().hex
        token = _current.set(request_id)
        try:
            response = self.get_response(request)
        finally:
            _current.reset(token)
        response["X-Request-ID"] = request_id
        return response


def bind_request_id(value: str) -> contextvars.Token[str]:
    """Run what follows under ``value`` (a Celery task's id): its logs and audit events carry it."""
    return _current.set(value)


def unbind_request_id(token: contextvars.Token[str]) -> None:
    _current.reset(token)
