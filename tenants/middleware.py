"""Per-request scope for the scoping door's membership memo (see `tenants.scoping`)."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from tenants.scoping import memberships_read_once


class MembershipsReadOnceMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with memberships_read_once():
            return self.get_response(request)
