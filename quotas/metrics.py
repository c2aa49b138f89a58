"""Admission's metrics, read from the database at scrape time (served by gpuplatform.observability)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Count
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from quotas.models import CapacityRequest, RequestTransition


def collect() -> Iterable[Metric]:
    decisions = CounterMetricFamily(
        "gpuplatform_admission_decisions",
        "Capacity request transitions by the state entered and the reason code.",
        labels=["to_state", "reason"],
    )
    for to_state, reason, n in (
        RequestTransition.objects.values_list("to_state", "reason_code")
        .annotate(n=Count("id"))
        .order_by("to_state", "reason_code")
    ):
        decisions.add_metric([to_state, reason or "none"], float(n))
    yield decisions

    requests = GaugeMetricFamily(
        "gpuplatform_capacity_requests", "Capacity requests in each state.", labels=["state"]
    )
    for state, n in CapacityRequest.objects.values_list("state").annotate(n=Count("id")).order_by("state"):
        requests.add_metric([state], float(n))
    yield requests
