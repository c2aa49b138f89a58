"""The service's own metrics, served at ``/metrics`` (prometheus-client).

Two kinds: what a process observes as it works (request latency by route, Celery task durations and
failures: histograms and counters in this process's registry, or in ``PROMETHEUS_MULTIPROC_DIR`` when
several processes share one endpoint), and what the database knows (sync lag per cluster and kind,
admission decisions and their reasons, rollout convergence), read at scrape time by collectors that the
domain apps register here, so every web replica answers the same and nothing is lost when a worker
restarts. Labels are bounded: a route is its URL pattern, never the path.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import REGISTRY, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)

# Seconds; the API's P95 target is 150 ms, so the buckets are finest there.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
JOB_BUCKETS = (0.05, 0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 900, 3600)

HTTP_LATENCY = Histogram(
    "gpuplatform_http_request_duration_seconds",
    "Time to answer an HTTP request, by route pattern, method and status class.",
    ["route", "method", "status"],
    buckets=LATENCY_BUCKETS,
)
TASK_DURATION = Histogram(
    "gpuplatform_task_duration_seconds",
    "Time a Celery task ran, by task name and outcome (success, failure, retry).",
    ["task", "outcome"],
    buckets=JOB_BUCKETS,
)
TASK_FAILURES = Counter(
    "gpuplatform_task_failures",
    "Celery tasks that raised, by task name and exception type.",
    ["task", "error"],
)

# The text format every Prometheus since 2.0 reads (1.0.0 differs only in escaping UTF-8 names).
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4

_collectors: dict[str, Collector] = {}


COLLECTOR_ERRORS = Counter(
    "gpuplatform_metrics_collector_errors",
    "Scrapes in which a database collector failed (its metrics were left out, the rest served).",
    ["collector"],
)


class _FromDatabase(Collector):
    def __init__(self, name: str, collect: Callable[[], Iterable[Metric]]) -> None:
        self._name = name
        self._collect = collect

    def describe(self) -> Iterable[Metric]:
        # Without describe(), registering would call collect(): database queries at app start.
        return []

    def collect(self) -> Iterable[Metric]:
        try:
            return list(self._collect())
        except Exception:
            # One failing collector (its database down, a query timing out) must not blank the scrape.
            logger.exception("metrics collector %s failed", self._name)
            COLLECTOR_ERRORS.labels(collector=self._name).inc()
            return []


def register_collector(name: str, collect: Callable[[], Iterable[Metric]]) -> None:
    """The port through which a domain app adds metrics read at scrape time (idempotent by name, so an
    AppConfig.ready run twice registers once)."""
    if name in _collectors:
        return
    collector = _FromDatabase(name, collect)
    _collectors[name] = collector
    REGISTRY.register(collector)


def exposition() -> tuple[bytes, str]:
    """The text format of every metric: this process's, or all processes' in multiprocess mode, plus
    the database collectors."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        for collector in _collectors.values():
            registry.register(collector)
        return generate_latest(registry), CONTENT_TYPE
    return generate_latest(REGISTRY), CONTENT_TYPE


def observe_request(*, route: str, method: str, status: int, started: float) -> None:
    HTTP_LATENCY.labels(route=route, method=method, status=f"{status // 100}xx").observe(
        time.perf_counter() - started
    )


def observe_task(*, task: str, outcome: str, seconds: float) -> None:
    TASK_DURATION.labels(task=task, outcome=outcome).observe(seconds)


def count_task_failure(*, task: str, error: Any) -> None:
    TASK_FAILURES.labels(task=task, error=type(error).__name__ if error is not None else "unknown").inc()
