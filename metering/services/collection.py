"""The utilisation-basis hourly ledger: per-share GPU use, memory and energy from a usage source.

One cluster-hour at a time: the inventory's allocations and cards make the plan, the source (the
cluster's Prometheus, else the simulated one in the demo) answers in aggregates, the pure
metering/collection/attribute.py turns them into lines, and the lines replace the hour's rows of that
source (idempotent: the same answer gives the same rows). The source is read outside any transaction
(slow I/O holds no lock); the rows are written under the hour's MeteredHour lock.

Faults have an outcome each, recorded on the hour's MeteredHour (attempts, last_error, complete):
Prometheus down, slow, answering 5xx or a malformed body -> nothing of the hour changes except, when
it has no rows yet, a row per share marked incomplete (seen 0 of n: shown, never a zero); gaps, NaN or
negative samples -> fewer points seen -> incomplete rows; a partial answer's warnings are kept. Incomplete
hours are metered again by ``retry_incomplete_usage`` until the source's retention has passed them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from gpuplatform.db.bulk_insert import insert_many
from gpuplatform.errors import Conflict, NotFound, ValidationFailed
from gpuplatform.outbound.configured import user_url_session
from inventory.models import Allocation, Cluster, Gpu, Node, ShareableUnit
from metering.collection.attribute import (
    ENERGY_KWH,
    MEMORY_GIB_HOURS,
    USED_GE_HOURS,
    UsageLine,
    attribute_hour,
)
from metering.collection.config import SourceConfig, parse_config
from metering.collection.readings import (
    CardPlan,
    Holder,
    HourPlan,
    HourReadings,
    UsageSource,
    UsageSourceError,
)
from metering.collection.simulated import SimulatedUsageSource
from metering.models import BillingPeriod, MeteredHour, MetricsSource, PeriodState, UsageHour
from metering.models.usage import QTY_PLACES
from metering.prom import PrometheusUsageSource
from metering.services.adjustments import BookingRun, book_late_data
from metering.services.ledger import flavor_names
from metering.services.periods import ensure_period

HOUR = timedelta(hours=1)
USAGE_METERS = (USED_GE_HOURS, MEMORY_GIB_HOURS, ENERGY_KWH)
USAGE_SOURCES = ("prometheus", "simulated")
_QUANTUM = Decimal(1).scaleb(-QTY_PLACES)
SPLIT_SHARING = ("time-slicing", "mps")


@dataclass(frozen=True)
class UsageMetered:
    cluster_id: uuid.UUID
    hour: datetime
    source: str
    rows: int
    complete: bool
    error: str
    queries: int
    max_query_samples: int | None
    adjustments: int = 0  # lines booked in the next open period (the hour's period is closed)


def usage_source_for(*, cluster_id: uuid.UUID) -> tuple[UsageSource | None, SourceConfig]:
    """The cluster's configured Prometheus; else PROMETHEUS_URL with the default names; else the
    simulated source where settings allow it (the demo); else none."""
    prometheus = prometheus_for(cluster_id=cluster_id)
    if prometheus is not None:
        return prometheus, prometheus.config
    config = SourceConfig()
    if getattr(settings, "METERING_SIMULATED_USAGE", False):
        return SimulatedUsageSource(seed=1, step_seconds=config.scrape_interval_seconds), config
    return None, config


def prometheus_for(*, cluster_id: uuid.UUID) -> PrometheusUsageSource | None:
    """The cluster's configured Prometheus, else PROMETHEUS_URL with the default names, else none."""
    row = MetricsSource.objects.filter(cluster_id=cluster_id, enabled=True).first()
    if row is not None:
        # A platform-admin typed this URL: the outbound policy applies on every connection.
        return PrometheusUsageSource(url=row.url, config=parse_config(row.config), session=user_url_session())
    url = settings.PROMETHEUS_URL
    if url:
        return PrometheusUsageSource(url=url, config=SourceConfig())
    return None


def meter_usage_hour(
    *,
    cluster_id: uuid.UUID,
    hour: datetime,
    now: datetime | None = None,
    source: UsageSource | None = None,
    config: SourceConfig | None = None,
    run: BookingRun | None = None,
) -> UsageMetered:
    """Meter one cluster-hour's usage from its source. Reads the source with no lock held, then locks
    the hour's MeteredHour row and replaces that source's rows; idempotent. Records every attempt."""
    hour = _whole_hour(hour)
    if hour + HOUR > (now or timezone.now()):
        raise Conflict(f"the hour {hour:%Y-%m-%dT%H:00Z} is not over yet", code="hour_not_over")
    if not Cluster.objects.filter(pk=cluster_id).exists():
        raise NotFound("No such cluster.")
    if source is None:
        source, config = usage_source_for(cluster_id=cluster_id)
        if source is None:
            raise Conflict(
                "no usage source for this cluster (no metrics source, no PROMETHEUS_URL)",
                code="no_usage_source",
            )
    config = config or SourceConfig()
    plan, profile_ge = build_plan(cluster_id=cluster_id, hour=hour)
    error = ""
    try:
        readings = source.read_hour(plan=plan)
    except UsageSourceError as exc:
        error = str(exc)
        readings = HourReadings(hour=hour, step_seconds=config.scrape_interval_seconds)
    lines = attribute_hour(plan=plan, readings=readings, profile_ge=profile_ge)
    period = ensure_period(at=hour)
    with transaction.atomic():
        marker, _ = MeteredHour.objects.get_or_create(cluster_id=cluster_id, hour=hour, source=source.name)
        marker = MeteredHour.objects.select_for_update().get(pk=marker.pk)
        period = BillingPeriod.objects.select_for_update().get(pk=period.pk)
        existing = UsageHour.objects.filter(
            cluster_id=cluster_id, hour=hour, source=source.name, meter__in=USAGE_METERS
        )
        rows = marker.rows
        complete = not error and all(line.complete for line in lines)
        adjustments = 0
        if period.state == PeriodState.CLOSED and error:
            complete = False  # nothing was read: nothing to book; retried while the data is kept
        elif period.state == PeriodState.CLOSED:
            # The database refuses changes to a closed period: what the hour reads now, net of its
            # closed rows and of adjustments already booked, is booked in the next open period.
            meta = _allocation_meta([line.holder.share_key for line in lines if line.holder])
            adjustments = book_late_data(
                cluster_id=cluster_id,
                hour=hour,
                period=period,
                fresh=[_row(cluster_id, hour, period, source.name, line, meta) for line in lines],
                meters=USAGE_METERS,
                what=f"usage ({source.name})",
                partial_only_adds=True,
                run=run,
            )
        elif error and existing.exists():
            complete = False  # an outage never overwrites what an earlier attempt read
        else:
            existing.delete()
            meta = _allocation_meta([line.holder.share_key for line in lines if line.holder])
            fresh = [_row(cluster_id, hour, period, source.name, line, meta) for line in lines]
            insert_many(UsageHour, fresh)
            rows = len(lines)
        notes = "; ".join(readings.notes[:20])
        marker.rows = rows
        marker.complete = complete
        marker.attempts += 1
        marker.last_error = "\n".join(x for x in (error, notes) if x)[:4000]
        marker.computed_at = timezone.now()
        marker.save()
    samples = [q.samples for q in readings.queries if q.samples is not None]
    return UsageMetered(
        cluster_id,
        hour,
        source.name,
        rows,
        complete,
        error,
        len(readings.queries),
        max(samples) if samples else None,
        adjustments,
    )


def retry_incomplete_usage(
    *, now: datetime | None = None, retention_hours: int | None = None
) -> list[tuple[uuid.UUID, datetime]]:
    """The incomplete usage hours still inside their source's retention, oldest first: what the beat
    job meters again. Older ones stay incomplete and shown: the data that could fill them is gone."""
    now = now or timezone.now()
    due = []
    configs: dict[uuid.UUID, int] = {}
    for marker in MeteredHour.objects.filter(source__in=USAGE_SOURCES, complete=False).order_by(
        "hour", "cluster_id"
    ):
        keep = retention_hours
        if keep is None:
            if marker.cluster_id not in configs:
                _, config = usage_source_for(cluster_id=marker.cluster_id)
                configs[marker.cluster_id] = config.retention_hours
            keep = configs[marker.cluster_id]
        if marker.hour + HOUR <= now and marker.hour >= now - timedelta(hours=keep):
            due.append((marker.cluster_id, marker.hour))
    return due


def build_plan(*, cluster_id: uuid.UUID, hour: datetime) -> tuple[HourPlan, dict[str, Decimal]]:
    """The cluster-hour as the inventory knows it: cards (by UUID where known), their mode, holders."""
    end = hour + HOUR
    nodes = {
        n["name"]: n
        for n in Node.objects.filter(cluster_id=cluster_id)
        .filter(Q(present=True) | Q(gone_at__gt=hour))
        .values("id", "name", "sharing_strategy", "mig_strategy")
    }
    hami_nodes = set(
        ShareableUnit.objects.filter(cluster_id=cluster_id, kind="hami_gpu").values_list(
            "node__name", flat=True
        )
    )

    def node_mode(name: str) -> str:
        node = nodes.get(name)
        if name in hami_nodes:
            return "hami"
        if node and node["sharing_strategy"] in SPLIT_SHARING:
            return "split"
        if node and node["mig_strategy"] in ("single", "mixed"):
            return "mig"
        return "exclusive"

    cards = []
    for gpu in (
        Gpu.objects.filter(node__name__in=list(nodes), node__cluster_id=cluster_id)
        .values("uuid", "index", "node__name")
        .order_by("node__name", "index")
    ):
        key = gpu["uuid"] or f"unknown/{gpu['node__name']}/{gpu['index']}"
        cards.append(CardPlan(key, gpu["node__name"], node_mode(gpu["node__name"])))
    uuid_of = {
        g["id"]: g["uuid"] for g in Gpu.objects.filter(node__cluster_id=cluster_id).values("id", "uuid")
    }
    holders = []
    for a in (
        Allocation.objects.filter(cluster_id=cluster_id, started_at__lt=end)
        .filter(Q(ended_at__isnull=True) | Q(ended_at__gt=hour))
        .values(
            "id",
            "namespace",
            "holder_name",
            "node_name",
            "gpu_id",
            "ge",
            "count",
            "unit_key",
            "started_at",
            "ended_at",
        )
        .order_by("id")
    ):
        mode = "hami" if a["unit_key"].startswith("hami/") else node_mode(a["node_name"])
        holders.append(
            Holder(
                share_key=str(a["id"]),
                namespace=a["namespace"],
                pod=a["holder_name"],
                node=a["node_name"],
                card_uuid=uuid_of.get(a["gpu_id"], "") if a["gpu_id"] else "",
                ge=Decimal(a["ge"]),
                count=max(1, a["count"]),
                start=int((max(a["started_at"], hour) - hour).total_seconds()),
                stop=int((min(a["ended_at"] or end, end) - hour).total_seconds()),
                mode=mode,
            )
        )
    profile_ge: dict[str, Decimal] = {}
    mig_instances = 0
    for unit in ShareableUnit.objects.filter(cluster_id=cluster_id, kind="mig_instance").values(
        "mig_profile", "ge_each", "count"
    ):
        profile_ge.setdefault(unit["mig_profile"], Decimal(unit["ge_each"]))
        mig_instances += unit["count"]
    return HourPlan(hour, tuple(cards), tuple(holders), mig_instances), profile_ge


def _row(
    cluster_id: uuid.UUID,
    hour: datetime,
    period: BillingPeriod,
    source: str,
    line: UsageLine,
    meta: dict[str, dict[str, Any]],
) -> UsageHour:
    holder = line.holder
    return UsageHour(
        **(meta.get(holder.share_key, {}) if holder else {}),
        cluster_id=cluster_id,
        period=period,
        hour=hour,
        share_key=line.share_key[:600],
        meter=line.meter,
        allocation_id=uuid.UUID(holder.share_key) if holder else None,
        namespace=line.namespace[:63],
        node_name=line.node[:253],
        card_key=line.card_key[:200],
        ge=holder.ge if holder else Decimal(0),
        seconds=(holder.stop - holder.start) if holder else 0,
        quantity=line.quantity.quantize(_QUANTUM),
        attribution=line.attribution,
        source=source,
        samples_seen=line.samples_seen,
        samples_expected=line.samples_expected,
        complete=line.complete,
    )


def _whole_hour(hour: datetime) -> datetime:
    if hour.tzinfo is None:
        raise ValidationFailed("hour must be timezone-aware", field="hour")
    hour = hour.astimezone(UTC)
    if (hour.minute, hour.second, hour.microsecond) != (0, 0, 0):
        raise ValidationFailed("hour must be a whole hour", field="hour")
    return hour


def _allocation_meta(ids: list[str]) -> dict[str, dict[str, Any]]:
    """Tenant, pool, model and flavor of the allocations lines belong to (as the ledger rows carry)."""
    meta = {}
    flavors = flavor_names()
    for a in Allocation.objects.filter(pk__in=ids).values(
        "id",
        "tenant_id",
        "pool_id",
        "pool__name",
        "model_key",
        "resource_name",
        "node__pool_id",
        "node__pool__name",
    ):
        pool_id = a["pool_id"] or a["node__pool_id"]
        meta[str(a["id"])] = {
            "tenant_id": a["tenant_id"],
            "pool_id": pool_id,
            "pool_name": a["pool__name"] or a["node__pool__name"] or "",
            "gpu_model": a["model_key"],
            "flavor_name": flavors.get((pool_id, a["resource_name"]), ""),
            "resource_name": a["resource_name"],
        }
    return meta
