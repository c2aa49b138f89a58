"""Celery tasks of metering: thin wrappers taking ids, idempotent, with stable names."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from celery import shared_task
from django.urls import reverse
from django.utils import timezone

from gpuplatform.health.heartbeats import beat
from inventory.models import Cluster
from metering.report_tasks import build_report_task  # noqa: F401  (registers metering.build_report)
from metering.services.collection import meter_usage_hour, retry_incomplete_usage, usage_source_for
from metering.services.ledger import meter_allocation_hour
from metering.services.remeter import pending_changed_hours, remeter_changed_hours


@shared_task(name="metering.meter_hour")
def meter_hour_task(cluster_id: str, hour: str) -> dict[str, Any]:
    """Meter one cluster-hour (``hour`` ISO 8601, a whole UTC hour); running it twice gives the same rows."""
    done = meter_allocation_hour(cluster_id=uuid.UUID(cluster_id), hour=datetime.fromisoformat(hour))
    return {
        "cluster": cluster_id,
        "hour": done.hour.isoformat(),
        "rows": done.rows,
        "adjustments": done.adjustments,
    }


@shared_task(name="metering.meter_usage_hour")
def meter_usage_hour_task(cluster_id: str, hour: str) -> dict[str, Any]:
    """Meter one cluster-hour's usage (utilisation, memory, energy) from its source; idempotent. A
    source that fails is recorded on the hour (MeteredHour.last_error), not raised: the retry job
    meters it again."""
    done = meter_usage_hour(cluster_id=uuid.UUID(cluster_id), hour=datetime.fromisoformat(hour))
    return {
        "cluster": cluster_id,
        "hour": done.hour.isoformat(),
        "source": done.source,
        "rows": done.rows,
        "complete": done.complete,
        "error": done.error,
        "queries": done.queries,
        "max_query_samples": done.max_query_samples,
    }


@shared_task(name="metering.meter_last_hour")
def meter_last_hour_task() -> list[str]:
    """Beat entry: queue the hour that just ended for every cluster, one task each (allocation basis),
    and its usage where the cluster has a usage source."""
    hour = timezone.now().astimezone(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    queued = []
    for cluster_id in Cluster.objects.order_by("name").values_list("pk", flat=True):
        meter_hour_task.delay(str(cluster_id), hour.isoformat())
        if usage_source_for(cluster_id=cluster_id)[0] is not None:
            meter_usage_hour_task.delay(str(cluster_id), hour.isoformat())
        queued.append(str(cluster_id))
    beat(
        "metering.usage_collection",
        label="Usage collection (hourly)",
        every_seconds=3600,
        url=reverse("metering-usage"),
    )
    return queued


@shared_task(name="metering.retry_incomplete_usage")
def retry_incomplete_usage_task() -> list[str]:
    """Beat entry: meter again every incomplete usage hour still inside its source's retention."""
    queued = []
    for cluster_id, hour in retry_incomplete_usage():
        meter_usage_hour_task.delay(str(cluster_id), hour.isoformat())
        queued.append(f"{cluster_id}@{hour.isoformat()}")
    return queued


@shared_task(name="metering.remeter_changed_hours")
def remeter_changed_hours_task(change_id: int) -> dict[str, Any]:
    """Meter again the metered hours of one recorded allocation change (inventory.ChangedHours), by id;
    idempotent: a change already handled is skipped, and an hour metered again books only what differs."""
    done = remeter_changed_hours(change_id=int(change_id))
    return {
        "change": done.change_id,
        "hours": done.hours,
        "adjustments": done.adjustments,
        "skipped": done.skipped,
    }


@shared_task(name="metering.remeter_late_changes")
def remeter_late_changes_task() -> list[int]:
    """Beat entry: queue every allocation change the sync learnt of late, one task per change."""
    queued = pending_changed_hours()
    for change_id in queued:
        remeter_changed_hours_task.delay(change_id)
    return queued
