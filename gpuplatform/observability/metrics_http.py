"""HTTP side of the service's metrics: the timing middleware and the ``/metrics`` view."""

from __future__ import annotations

import hmac
import re
import time
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from gpuplatform.api.problems import plain_problem_response
from gpuplatform.observability.metrics import exposition, observe_request

UNMATCHED = "<unmatched>"
_GROUP = re.compile(r"\(\?P<(\w+)>[^)]*\)")


def route_label(route: str) -> str:
    """A URL pattern as people write it: DRF's router patterns are regexes
    (``api/v1/tenants/(?P<pk>[^/.]+)/$``), shown as ``api/v1/tenants/<pk>/``."""
    return _GROUP.sub(r"<\1>", route).lstrip("^").rstrip("$")


class RequestMetricsMiddleware:
    """Latency by URL pattern ("api/v1/capacity-requests/<pk>/"), so a label never holds an id."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = route_label(match.route) if match is not None and match.route else UNMATCHED
        if route != "metrics":
            observe_request(
                route=route, method=request.method or "", status=response.status_code, started=started
            )
        return response


def _may_scrape(request: HttpRequest) -> bool:
    """The bearer of ``METRICS_TOKEN``, or a platform-admin's session; nobody else, in any mode: the
    metrics name every cluster and pool, dedicated ones included."""
    user = getattr(request, "user", None)
    if user is not None and getattr(user, "is_platform_admin", False):
        return True
    token = settings.METRICS_TOKEN
    if not token:
        return False
    sent = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
    return hmac.compare_digest(sent.encode(), token.encode())


def metrics_view(request: HttpRequest) -> HttpResponse:
    """Prometheus' scrape target (the chart's ServiceMonitor sends the bearer token)."""
    if not _may_scrape(request):
        return plain_problem_response(
            status_code=401,
            code="metrics.token_required",
            title="A metrics token is required",
            detail="Send the METRICS_TOKEN as 'Authorization: Bearer <token>'.",
            headers={"WWW-Authenticate": "Bearer"},
        )
    body, content_type = exposition()
    return HttpResponse(body, content_type=content_type)
