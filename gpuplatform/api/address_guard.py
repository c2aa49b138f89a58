"""Per-address throttling of calls that fail authentication, checked before authentication runs.

DRF authenticates before it throttles, so a caller guessing tokens gets 401 after 401 and is never
slowed by the per-token or per-user limits (it has neither). This middleware counts, per client
address, the API answers that were 401 and, past ``API_ANON_THROTTLE_RATE`` in the window, answers
every API call from that address with 429 until the window ends, without looking at the credentials.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse

from gpuplatform.api.addresses import client_address
from gpuplatform.api.problems import plain_problem_response

PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """'120/minute' -> (120, 60): DRF's notation, so operators write every limit the same way."""
    count, _, period = rate.partition("/")
    return int(count), PERIODS[period[:1]]


# What a refused address is told, by the middleware and by the long poll's ASGI adapter alike.
REFUSED = {
    "code": "rate_limited",
    "title": "Too many requests",
    "detail": "Too many unauthenticated calls from this address; retry later.",
}


def _window_key(scope: str, ident: str, period: int) -> str:
    return f"{scope}:{ident}:{int(time.time()) // period}"


def wait_if_over(*, scope: str, ident: str, rate: str) -> int | None:
    """Seconds until the window ends when ``ident`` has used up ``rate`` in it, else None."""
    limit, period = parse_rate(rate)
    if cache.get(_window_key(scope, ident, period), 0) >= limit:
        return period - int(time.time()) % period
    return None


def count_in_window(*, scope: str, ident: str, rate: str) -> None:
    """One more against ``ident`` in the current window of ``rate`` (fixed windows, in the cache)."""
    _, period = parse_rate(rate)
    key = _window_key(scope, ident, period)
    if cache.add(key, 1, timeout=period + 1):
        return
    try:
        cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=period + 1)


def refused_for(address: str) -> int | None:
    """Seconds until ``address`` may call the API again, or None when it may call now."""
    return wait_if_over(scope="address-guard", ident=address, rate=settings.API_ANON_THROTTLE_RATE)


def count_failure(address: str) -> None:
    """One more answer of 401 to ``address`` in the current window."""
    count_in_window(scope="address-guard", ident=address, rate=settings.API_ANON_THROTTLE_RATE)


class AddressGuardMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith("/api/"):
            return self.get_response(request)
        address = client_address(request)
        retry_after = refused_for(address)
        if retry_after is not None:
            return plain_problem_response(
                status_code=429,
                **REFUSED,
                headers={"Retry-After": str(retry_after)},
                instance=request.path,
            )
        response = self.get_response(request)
        if response.status_code == 401:
            count_failure(address)
        return response
