"""The demo's month of usage: utilisation, GPU memory and energy per share, metered hour by hour
through the same collection code as production, and this month's hours on the allocation basis
(held card-hours, capacity, idle) from the inventory's ledger, so the open month's figures are
those of the hours already over, not nothing until a scheduled run. Without PROMETHEUS_URL the
source is the simulated one (deterministic, seeded: the same demo gives the same month); with it,
that Prometheus is read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from threading import Event

from django.conf import settings
from django.db.models import Min, Q
from django.utils import timezone

from inventory.models import Allocation, Cluster
from metering.collection.readings import UsageSource
from metering.collection.simulated import SimulatedUsageSource
from metering.models import MeteredHour
from metering.prom import PrometheusUsageSource
from metering.services.adjustments import BookingRun
from metering.services.collection import meter_usage_hour
from metering.services.ledger import LEDGER_SOURCE, meter_allocation_hour
from metering.services.periods import month_of
from metering.services.sources import source_config

DEMO_DAYS = 30
HOUR = timedelta(hours=1)


def demo_usage_source() -> UsageSource:
    url = settings.PROMETHEUS_URL
    if url:
        return PrometheusUsageSource(url=url, config=source_config(None))
    return SimulatedUsageSource(seed=1)


def seed_demo_usage(
    *,
    cluster: Cluster,
    days: int = DEMO_DAYS,
    now: datetime | None = None,
    stop: Event | None = None,
    pause_seconds: float = 0.0,
) -> int:
    """Meter each past hour of the last ``days`` in which something was held and that is not metered
    yet (a second demo start adds only the hours since), newest first, so the recent days show first.
    A second or so an hour on SQLite: the demo runs it beside the server. Returns the hours metered."""
    now = now or timezone.now()
    last = now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    first_held = Allocation.objects.filter(cluster=cluster).aggregate(first=Min("started_at"))["first"]
    if first_held is None:
        return 0
    hour = max(
        last - timedelta(days=days), first_held.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    )
    source = demo_usage_source()
    done = set(
        MeteredHour.objects.filter(cluster=cluster, source=source.name, hour__gte=hour).values_list(
            "hour", flat=True
        )
    )
    _, this_month, _ = month_of(at=last)
    ledger_done = set(
        MeteredHour.objects.filter(
            cluster=cluster, source=LEDGER_SOURCE, complete=True, hour__gte=this_month
        ).values_list("hour", flat=True)
    )
    metered = 0
    run = BookingRun()  # late data for a closed month: one run in the audit log, not one line per hour
    at = last - HOUR
    while at >= hour and not (stop and stop.is_set()):
        held = Allocation.objects.filter(cluster=cluster, started_at__lt=at + HOUR).filter(
            Q(ended_at__isnull=True) | Q(ended_at__gt=at)
        )
        if at >= this_month and at not in ledger_done:
            meter_allocation_hour(cluster_id=cluster.pk, hour=at, now=now)
        if at not in done and held.exists():
            meter_usage_hour(cluster_id=cluster.pk, hour=at, now=now, source=source, run=run)
            metered += 1
            if pause_seconds and stop is not None:
                # Beside the server, SQLite has one writer: leave the lock to the API between hours.
                stop.wait(pause_seconds)
        at -= HOUR
    return metered
