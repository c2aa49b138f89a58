"""/healthz: the process answers. /readyz: its dependencies answer (JSON, one entry per check).
The same checks are metrics (``gpuplatform_check_ok``, ``_seconds``) at /metrics, for the chart's alerts."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import redis
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from prometheus_client.core import GaugeMetricFamily, Metric


@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return f"{connection.vendor} reachable"


def _check_redis() -> str:
    if not settings.REDIS_URL:
        return "not configured (embedded demo mode: in-process cache and broker)"
    client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=2)
    try:
        client.ping()
    finally:
        client.close()
    return "reachable"


CHECKS: dict[str, Callable[[], str]] = {"database": _check_database, "redis": _check_redis}


def _run_checks() -> dict[str, dict[str, object]]:
    results: dict[str, dict[str, object]] = {}
    for name, check in CHECKS.items():
        started = time.perf_counter()
        try:
            detail, ok = check(), True
        except Exception as exc:
            detail, ok = f"{type(exc).__name__}: {exc}", False
        results[name] = {"ok": ok, "detail": detail, "ms": round((time.perf_counter() - started) * 1000, 1)}
    return results


@never_cache
def readyz(request: HttpRequest) -> JsonResponse:
    results = _run_checks()
    ready = all(result["ok"] for result in results.values())
    return JsonResponse(
        {"status": "ok" if ready else "unavailable", "checks": results}, status=200 if ready else 503
    )


def collect_checks() -> Iterable[Metric]:
    """The readiness checks as metrics (gpuplatform/metrics.py serves them at /metrics)."""
    ok = GaugeMetricFamily(
        "gpuplatform_check_ok", "Whether a dependency answered this scrape (1) or not (0).", labels=["check"]
    )
    seconds = GaugeMetricFamily(
        "gpuplatform_check_seconds", "How long the dependency took to answer.", labels=["check"]
    )
    for name, result in _run_checks().items():
        ok.add_metric([name], 1.0 if result["ok"] else 0.0)
        seconds.add_metric([name], float(str(result["ms"])) / 1000)
    yield from (ok, seconds)
