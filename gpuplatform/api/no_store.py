"""Every answer under /api/ tells caches not to keep it: they carry tenants' data and, once, a new
token's secret, and a shared proxy or a browser's disk cache is no place for either."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponseBase
from django.utils.cache import add_never_cache_headers


class ApiNoStoreMiddleware:
    """First in MIDDLEWARE, so it also marks what the others answer themselves (429s, problems)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if request.path.startswith("/api/"):
            add_never_cache_headers(response)  # no-store, no-cache, must-revalidate, private; Expires
        return response
