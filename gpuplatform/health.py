"""/healthz: the process answers. /readyz: its dependencies answer (JSON, one entry per check)."""

from __future__ import annotations

import time
from collections.abc import Callable

import redis
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache


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


@never_cache
def readyz(request: HttpRequest) -> JsonResponse:
    results: dict[str, dict[str, object]] = {}
    for name, check in CHECKS.items():
        started = time.perf_counter()
        try:
            detail, ok = check(), True
        except Exception as exc:
            detail, ok = f"{type(exc).__name__}: {exc}", False
        results[name] = {"ok": ok, "detail": detail, "ms": round((time.perf_counter() - started) * 1000, 1)}
    ready = all(result["ok"] for result in results.values())
    return JsonResponse(
        {"status": "ok" if ready else "unavailable", "checks": results}, status=200 if ready else 503
    )
