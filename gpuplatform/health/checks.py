"""/healthz: the process answers. /readyz: its dependencies answer (JSON, one entry per check), and
whether the background loops still succeed: a stale loop makes it "degraded", still 200, since
restarting this process would not restart a loop elsewhere; only a failed dependency is a 503.
The same checks are metrics (``gpuplatform_check_ok``, ``_seconds``, ``gpuplatform_loop_stale``) at
/metrics, for the chart's alerts."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import redis
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from prometheus_client.core import GaugeMetricFamily, Metric

from gpuplatform.health.heartbeats import loop_health


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


def _loops() -> dict[str, object]:
    """The loops that ever beat: how many, and each stale one with its last success. Names only (ids,
    never cluster names): /readyz answers anyone, and the platform's names are for platform roles."""
    now = timezone.now()
    loops = loop_health(now=now)
    return {
        "count": len(loops),
        "stale": [
            {
                "name": loop.name,
                "last_success": loop.last_success.isoformat(),
                "stale_after_seconds": loop.stale_after_seconds,
            }
            for loop in loops
            if loop.stale
        ],
    }


@never_cache
def readyz(request: HttpRequest) -> JsonResponse:
    results = _run_checks()
    ready = all(result["ok"] for result in results.values())
    if not ready:
        return JsonResponse({"status": "unavailable", "checks": results}, status=503)
    loops = _loops()
    status = "degraded" if loops["stale"] else "ok"
    return JsonResponse({"status": status, "checks": results, "loops": loops}, status=200)


def collect_checks() -> Iterable[Metric]:
    """The readiness checks as metrics (gpuplatform/observability/metrics.py serves them at /metrics)."""
    ok = GaugeMetricFamily(
        "gpuplatform_check_ok", "Whether a dependency answered this scrape (1) or not (0).", labels=["check"]
    )
    seconds = GaugeMetricFamily(
        "gpuplatform_check_seconds", "How long the dependency took to answer.", labels=["check"]
    )
    results = _run_checks()
    for name, result in results.items():
        ok.add_metric([name], 1.0 if result["ok"] else 0.0)
        seconds.add_metric([name], float(str(result["ms"])) / 1000)
    yield from (ok, seconds)
    if not results["database"]["ok"]:
        return
    stale = GaugeMetricFamily(
        "gpuplatform_loop_stale",
        "Whether a background loop has not succeeded within its threshold (1) or has (0).",
        labels=["loop"],
    )
    age = GaugeMetricFamily(
        "gpuplatform_loop_last_success_age_seconds",
        "Seconds since a background loop last succeeded.",
        labels=["loop"],
    )
    now = timezone.now()
    for loop in loop_health(now=now):
        stale.add_metric([loop.name], 1.0 if loop.stale else 0.0)
        age.add_metric([loop.name], (now - loop.last_success).total_seconds())
    yield from (stale, age)
