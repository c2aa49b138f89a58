"""Inventory's metrics, read from the database at scrape time (served by gpuplatform.observability)."""

from __future__ import annotations

from collections.abc import Iterable

from django.utils import timezone
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from inventory.capacity import pool_model_capacity
from inventory.models import NodePool, ParseIssueCount, SyncState


def collect() -> Iterable[Metric]:
    now = timezone.now()
    lag = GaugeMetricFamily(
        "gpuplatform_inventory_sync_lag_seconds",
        "Seconds since the inventory last committed a list or watch batch of this kind.",
        labels=["cluster", "kind"],
    )
    last = GaugeMetricFamily(
        "gpuplatform_inventory_sync_last_success_timestamp_seconds",
        "When the inventory last committed a list or watch batch of this kind (Unix time).",
        labels=["cluster", "kind"],
    )
    healthy = GaugeMetricFamily(
        "gpuplatform_inventory_sync_healthy",
        "1 when the last attempt of this kind succeeded, 0 after an error.",
        labels=["cluster", "kind"],
    )
    events = CounterMetricFamily(
        "gpuplatform_inventory_sync_events", "Watch events applied.", labels=["cluster", "kind"]
    )
    relists = CounterMetricFamily(
        "gpuplatform_inventory_sync_relists", "Full re-lists (410 Gone, resyncs).", labels=["cluster", "kind"]
    )
    for state in SyncState.objects.select_related("cluster").order_by("cluster__name", "kind"):
        labels = [state.cluster.name, state.kind]
        if state.last_success_at is not None:
            lag.add_metric(labels, (now - state.last_success_at).total_seconds())
            last.add_metric(labels, state.last_success_at.timestamp())
        healthy.add_metric(labels, 1.0 if state.healthy else 0.0)
        events.add_metric(labels, float(state.events))
        relists.add_metric(labels, float(state.relists))
    yield from (lag, last, healthy, events, relists)

    issues = GaugeMetricFamily(
        "gpuplatform_inventory_parse_issues",
        "Objects the last sync found with this parse issue.",
        labels=["cluster", "code"],
    )
    for cluster, code, count in ParseIssueCount.objects.order_by("cluster__name", "code").values_list(
        "cluster__name", "code", "count"
    ):
        issues.add_metric([cluster, code], float(count))
    yield issues

    cards = GaugeMetricFamily(
        "gpuplatform_pool_cards",
        "Physical cards per pool and GPU model.",
        labels=["cluster", "pool", "model"],
    )
    allocated = GaugeMetricFamily(
        "gpuplatform_pool_allocated_ge",
        "GPU equivalents held per pool and GPU model (capped at the cards).",
        labels=["cluster", "pool", "model"],
    )
    pools = {p.pk: p for p in NodePool.objects.select_related("cluster")}
    for pool_id, rows in pool_model_capacity(pool_ids=list(pools)).items():
        pool = pools[pool_id]
        for row in rows:
            labels = [pool.cluster.name, pool.name, row.model_key]
            cards.add_metric(labels, float(row.cards))
            allocated.add_metric(labels, float(row.allocated_ge))
    yield from (cards, allocated)
