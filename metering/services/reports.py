"""A billing period's chargeback report: read the ledger in aggregate, price it, hand it to the
pure chargeback, store its lines. Rebuilt at will while the period is open or closing; frozen once
closed (the database refuses new lines then)."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Max, Q, Sum
from django.utils import timezone

from gpuplatform.errors import Conflict, NotFound, ValidationFailed
from inventory.models import Cluster
from metering.chargeback.report import (
    IDLE_CENTRAL,
    IDLE_MODES,
    Chargeback,
    PoolCapacity,
    PricedUsage,
    compute_chargeback,
)
from metering.models import (
    Adjustment,
    Basis,
    BillingPeriod,
    CapacityHour,
    Credit,
    Meter,
    PeriodState,
    RateCard,
    ReportLine,
    UsageHour,
)
from metering.models.periods import IDLE_METER
from metering.services.currency import amount_converter, converted_cards
from metering.services.pricing import load_cards, price_segments
from tenants.models import Tenant

ZERO = Decimal(0)
ONE = Decimal(1)
QTY = Decimal("1e-9")
_HOUR = timedelta(hours=1)
SliceKey = tuple[Any, datetime | None, datetime | None]


def _per_bucket(field: str, cuts: list[Any]) -> dict[str, Sum]:
    """``field`` summed apart for each bucket: bucket i holds cuts[i-1] <= hour < cuts[i] (the first
    bucket also anything earlier; hours from the last cut on are in none, as no bucket prices them).

    Why filtered sums and not a GROUP BY on the bucket: PostgreSQL cannot tell that an expression of
    the hour has a handful of values, so it estimated 720,000 groups where there are 400 (at 7.2M
    rows) and sorted the month to group it; grouped by plain columns, whose joint number of
    values the extended statistics of migration 0006 give it, it hashes them in one pass
    (docs/benchmarks.md). Django writes the filters as CASE on the demo's SQLite: the same sums."""
    sums: dict[str, Sum] = {}
    for i in range(1, len(cuts)):
        span = Q(hour__lt=cuts[i]) if i == 1 else Q(hour__gte=cuts[i - 1], hour__lt=cuts[i])
        sums[f"{field}_{i}"] = Sum(field, filter=span)
    return sums


def compute_period_chargeback(
    *,
    period: BillingPeriod,
    idle: str = IDLE_CENTRAL,
    slice_hours: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[Chargeback, dict[str, str]]:
    """The period's chargeback and the pool labels (pool id -> "cluster/pool"). Reads only.
    ``slice_hours``: read the usage per cluster in slices of that many hours, each its own short
    query, calling ``progress(done, of)`` after each (0: one scan of the month, one slice).

    The ledger is summed by the database in two queries (usage, capacity), grouped per pool, GPU
    model, tenant, flavor and meter, each group's sums apart per *price bucket*: the period cut at
    every rate card's start and end inside it. Each bucket lies inside one price segment of every pool
    (the cuts of all cards include each pool's), so a bucket is priced by its pool's card and buckets
    of one card add up in the pure chargeback. One scan of the month, whatever the number of pools
    and price changes."""
    # A card in a currency finance set an exchange rate for is priced in the period's currency.
    cards = converted_cards(cards=load_cards(start=period.starts_at, end=period.ends_at), period=period)
    tenants = {str(t["pk"]): t for t in Tenant.objects.values("pk", "path", "slug", "cost_centre")}
    cuts = sorted(
        {period.starts_at, period.ends_at}
        | {
            t
            for c in cards
            for t in (c.effective_from, c.effective_to)
            if t is not None and period.starts_at < t < period.ends_at
        }
    )
    spans = range(1, len(cuts))
    # Cluster ids, not names, in the groups: names are unique, and the month need not join to them.
    clusters = dict(Cluster.objects.values_list("pk", "name"))
    pools: dict[tuple[Any, str], str] = {}
    capacity_rows: dict[tuple[Any, str, int], tuple[Decimal, Decimal]] = {}
    capacity_groups: Iterable[Mapping[str, Any]] = (
        CapacityHour.objects.filter(period=period)
        .values("pool_id", "cluster_id", "pool_name", "gpu_model")
        .annotate(**_per_bucket("card_hours", cuts), **_per_bucket("idle_card_hours", cuts))
        .order_by()
    )
    for row in capacity_groups:
        pools[(row["pool_id"], row["gpu_model"])] = f"{clusters[row['cluster_id']]}/{row['pool_name']}"
        for i in spans:
            if row[f"card_hours_{i}"] is not None:  # NULL: no row of the group in the bucket
                capacity_rows[(row["pool_id"], row["gpu_model"], i)] = (
                    row[f"card_hours_{i}"],
                    row[f"idle_card_hours_{i}"],
                )
    # (pool, model, bucket) -> (tenant, flavor) -> {meter: (quantity, card-hours)}
    usage_rows: dict[tuple[Any, str, int], dict[tuple[str, str], dict[str, tuple[Decimal, Decimal]]]] = (
        defaultdict(lambda: defaultdict(dict))
    )
    slices = ledger_slices(period=period, clusters=list(clusters), hours=slice_hours)
    for done, (cluster_id, start, end) in enumerate(slices, start=1):
        usage_groups: Iterable[Mapping[str, Any]] = (
            UsageHour.objects.filter(period=period, meter__in=(Meter.ALLOCATED_GE_HOURS, Meter.USED_GE_HOURS))
            .filter(_in_slice(cluster_id, start, end))
            .values("pool_id", "cluster_id", "pool_name", "gpu_model", "tenant_id", "flavor_name", "meter")
            .annotate(**_per_bucket("quantity", cuts), **_per_bucket("card_hours", cuts))
            .order_by()
        )
        for urow in usage_groups:
            pools.setdefault(
                (urow["pool_id"], urow["gpu_model"]), f"{clusters[urow['cluster_id']]}/{urow['pool_name']}"
            )
            for i in spans:
                if urow[f"quantity_{i}"] is None:
                    continue
                key = (urow["pool_id"], urow["gpu_model"], i)
                meters = usage_rows[key][(str(urow["tenant_id"] or ""), urow["flavor_name"])]
                quantity, card_hours = meters.get(urow["meter"], (ZERO, ZERO))  # summed across slices
                meters[urow["meter"]] = (
                    quantity + urow[f"quantity_{i}"],
                    card_hours + (urow[f"card_hours_{i}"] or ZERO),
                )
        if progress is not None:
            progress(done, len(slices))
    usage: list[PricedUsage] = []
    capacity: list[PoolCapacity] = []
    for (pool_id, model), label in sorted(pools.items(), key=lambda item: (item[1], item[0][1])):
        segments = price_segments(
            cards=cards, pool_id=pool_id, gpu_model=model, start=period.starts_at, end=period.ends_at
        )
        for index in range(1, len(cuts)):
            at = cuts[index - 1]
            card = next((seg.card for seg in segments if seg.start <= at < seg.end), None)
            price = card.price_per_ge_hour if card else None
            currency = card.currency if card else ""
            basis = card.basis if card else Basis.ALLOCATION
            card_ref = str(card.pk) if card else ""
            priced_total = ZERO
            for (tenant_id, flavor), meters in sorted(usage_rows.get((pool_id, model, index), {}).items()):
                ge_hours, alloc_card_hours = meters.get(Meter.ALLOCATED_GE_HOURS, (ZERO, ZERO))
                used_ge_hours = meters[Meter.USED_GE_HOURS][0] if Meter.USED_GE_HOURS in meters else None
                card_hours = priced_quantity(
                    basis=basis,
                    allocated=alloc_card_hours,
                    used=used_ge_hours or ZERO,
                    weight=card.blend_weight if card else ONE,
                )
                priced_total += card_hours
                tenant = tenants.get(tenant_id) if tenant_id else None
                usage.append(
                    PricedUsage(
                        tenant=tenant_id,
                        tenant_path=tenant["path"] if tenant else "",
                        pool=label,
                        flavor=flavor,
                        gpu_model=model,
                        currency=currency,
                        unit_price=price,
                        ge_hours=ge_hours,
                        card_hours=card_hours,
                        basis=basis,
                        used_ge_hours=used_ge_hours,
                        rate_card=card_ref,
                    )
                )
            found = capacity_rows.get((pool_id, model, index))
            if found is not None:
                total, ledger_idle = found
                # On the allocation basis the ledger's idle is exact per node-hour; on the others,
                # idle is what the priced quantity leaves of the pool's cards x hours.
                capacity.append(
                    PoolCapacity(
                        pool=label,
                        gpu_model=model,
                        currency=currency,
                        unit_price=price,
                        card_hours=total,
                        idle_card_hours=ledger_idle if basis == Basis.ALLOCATION else total - priced_total,
                        basis=basis,
                        rate_card=card_ref,
                    )
                )
    usage.extend(_priced_adjustments(period=period, tenants=tenants))
    return compute_chargeback(usage=usage, capacity=capacity, idle=idle), pools_by_id(pools)


def ledger_slices(*, period: BillingPeriod, clusters: list[Any], hours: int) -> list[SliceKey]:
    """(cluster id, start, end) per slice of the period's usage; one slice of everything when
    ``hours`` is 0. Per cluster and hour range, so each slice reads through the usage table's
    (cluster, hour) index instead of scanning the month again."""
    if hours <= 0:
        return [(None, None, None)]
    step = timedelta(hours=hours)
    found: list[SliceKey] = []
    for cluster_id in sorted(clusters, key=str):
        start = period.starts_at
        while start < period.ends_at:
            found.append((cluster_id, start, min(start + step, period.ends_at)))
            start += step
    return found


def _in_slice(cluster_id: Any, start: datetime | None, end: datetime | None) -> Q:
    if cluster_id is None or start is None or end is None:
        return Q()
    return Q(cluster_id=cluster_id, hour__gte=start, hour__lt=end)


def unpriced_card_hours_of(*, period: BillingPeriod) -> Decimal:
    """The card-hours of ``period`` no rate card covers now (usage and idle): what closing it would
    freeze unpriced. Reads only (one chargeback of the month)."""
    chargeback, _ = compute_period_chargeback(period=period)
    return chargeback.unpriced_card_hours


def priced_quantity(*, basis: str, allocated: Decimal, used: Decimal, weight: Decimal) -> Decimal:
    """The card-hours a rate card prices: allocation, what the card-hour rule charged; utilisation,
    the GE-hours used; blended, ``weight`` x allocated + (1 - weight) x used, to the nanohour."""
    if basis == Basis.UTILISATION:
        return used
    if basis == Basis.BLENDED:
        return (weight * allocated + (ONE - weight) * used).quantize(QTY)
    return allocated


def pools_by_id(pools: dict[tuple[Any, str], str]) -> dict[str, str]:
    return {str(pool_id): label for (pool_id, _), label in pools.items()}


def _priced_adjustments(*, period: BillingPeriod, tenants: dict[str, Any]) -> Iterator[PricedUsage]:
    """Adjustments booked into ``period`` of the priced meters (GE-hours held and used) and of idle,
    each priced at the rate card and on the basis of the hour it corrects: an allocation adjustment's
    card-hours count ``w``, a utilisation one's GE-hours ``1 - w`` (allocation basis w = 1, utilisation
    w = 0, blended the card's weight), as ``priced_quantity`` weighs the two meters of an hour.

    Idle moves the other way, so that the corrected pool still recovers cards x hours x price across
    periods: a node's idle adjustment (the allocation basis' idle) counts ``w``, and a utilisation
    adjustment takes its ``1 - w`` share back out of idle (that basis' idle is what use leaves)."""
    rows = list(
        Adjustment.objects.filter(
            period=period, meter__in=(Meter.ALLOCATED_GE_HOURS, Meter.USED_GE_HOURS, IDLE_METER)
        )
        .select_related("adjusts_period", "cluster")
        .order_by("hour", "share_key", "meter", "created_at")
    )
    if not rows:
        return
    # The corrected hours lie in earlier periods: their prices, not this period's.
    # (converted, like every price booked in ``period``, at its exchange rates)
    old_cards = converted_cards(
        cards=load_cards(start=min(r.hour for r in rows), end=max(r.hour for r in rows) + _HOUR),
        period=period,
    )
    for r in rows:
        seg = price_segments(
            cards=old_cards, pool_id=r.pool_id, gpu_model=r.gpu_model, start=r.hour, end=r.hour + _HOUR
        )
        card = seg[0].card if seg else None
        basis = card.basis if card else Basis.ALLOCATION
        weight = card.blend_weight if card else ONE
        tenant = tenants.get(str(r.tenant_id)) if r.tenant_id else None
        held = r.meter == Meter.ALLOCATED_GE_HOURS
        corrected = PricedUsage(
            tenant=str(r.tenant_id or ""),
            tenant_path=tenant["path"] if tenant else "",
            pool=f"{r.cluster.name}/{r.pool_name}",
            flavor=r.flavor_name,
            gpu_model=r.gpu_model,
            currency=card.currency if card else "",
            unit_price=card.price_per_ge_hour if card else None,
            ge_hours=r.quantity_delta if held else ZERO,
            card_hours=ZERO,
            kind="adjustment",
            adjusts=r.adjusts_period.label,
            basis=basis,
            used_ge_hours=None if held or r.meter == IDLE_METER else r.quantity_delta,
            rate_card=str(card.pk) if card else "",
        )
        if r.meter == IDLE_METER:
            idle = priced_quantity(basis=basis, allocated=r.card_hours_delta, used=ZERO, weight=weight)
            if idle:
                yield _idle_of(corrected, idle)
            continue
        priced = priced_quantity(
            basis=basis,
            allocated=r.card_hours_delta if held else ZERO,
            used=ZERO if held else r.quantity_delta,
            weight=weight,
        )
        yield replace(corrected, card_hours=priced)
        if not held and priced:
            yield _idle_of(corrected, -priced)


def _idle_of(corrected: PricedUsage, card_hours: Decimal) -> PricedUsage:
    """The idle a correction moved: a platform line of the corrected pool, hour and price."""
    return replace(
        corrected,
        tenant="",
        tenant_path="",
        flavor="",
        ge_hours=ZERO,
        card_hours=card_hours,
        kind="idle_adjustment",
        used_ge_hours=None,
    )


def build_period_report(
    *,
    period_id: uuid.UUID,
    at: datetime | None = None,
    idle: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> BillingPeriod:
    """Replace the period's report lines and summary with a fresh build (``idle``: central or
    distributed, else as last built). Locks the period only to replace the lines; refused once it is
    closed. Idempotent: the same ledger gives the same lines. ``progress(done, of)`` after each
    slice of the ledger read (``settings.REPORT_BUILD_SLICE_HOURS``)."""
    period = _open_period(BillingPeriod.objects.filter(pk=period_id).first())
    mode = idle_mode_of(period, idle)
    # Computed before the lock, from committed rows, in slices: summing a month of ledger takes a
    # while (minutes on the demo's SQLite, where a write transaction stops every other writer,
    # logins included). A draft is the ledger as read then; a close meanwhile wins, and this build is
    # refused below. Only the replacement of the lines is a write transaction, and a short one.
    chargeback, _ = compute_period_chargeback(
        period=period, idle=mode, slice_hours=settings.REPORT_BUILD_SLICE_HOURS, progress=progress
    )
    with transaction.atomic():
        period = _open_period(BillingPeriod.objects.select_for_update().filter(pk=period_id).first())
        store_report(period=period, chargeback=chargeback, mode=mode, at=at or timezone.now())
    return period


@dataclass(frozen=True)
class PreparedReport:
    """A period's report computed outside any transaction, with the mark of what it was read from."""

    mode: str
    mark: tuple[Any, ...]
    chargeback: Chargeback


def prepare_report(*, period: BillingPeriod, idle: str | None = None) -> PreparedReport:
    """Compute the report from committed rows, in slices, before any lock is taken; the mark is
    taken first, so a change made while the ledger is read shows as a different mark."""
    mode = idle_mode_of(period, idle)
    mark = ledger_mark(period=period)
    chargeback, _ = compute_period_chargeback(
        period=period, idle=mode, slice_hours=settings.REPORT_BUILD_SLICE_HOURS
    )
    return PreparedReport(mode=mode, mark=mark, chargeback=chargeback)


def ledger_mark(*, period: BillingPeriod) -> tuple[Any, ...]:
    """What the period's report is computed from, in brief: rows of the ledger counted with their
    newest write (re-metering an hour replaces its rows with newer ones), the rate cards and the
    tenants as they are. Equal marks: the same report. A few aggregates, cheap beside the report."""
    usage = UsageHour.objects.filter(period=period).aggregate(n=Count("pk"), last=Max("computed_at"))
    capacity = CapacityHour.objects.filter(period=period).aggregate(n=Count("pk"), last=Max("computed_at"))
    adjustments = Adjustment.objects.filter(period=period).aggregate(n=Count("pk"), last=Max("created_at"))
    cards = RateCard.objects.order_by("pk").values_list(
        "pk", "gpu_model", "flavor_id", "currency", "price_per_ge_hour", "basis", "blend_weight",
        "effective_from", "effective_to",
    )  # fmt: skip
    tenants = Tenant.objects.order_by("pk").values_list("pk", "path", "slug", "cost_centre")
    return (
        tuple(usage.values()),
        tuple(capacity.values()),
        tuple(adjustments.values()),
        tuple(cards),
        tuple(tenants),
    )


def _open_period(period: BillingPeriod | None) -> BillingPeriod:
    if period is None:
        raise NotFound("No such billing period.")
    if period.state == PeriodState.CLOSED:
        raise Conflict(f"billing period {period.label} is closed", code="period_closed")
    return period


def idle_mode_of(period: BillingPeriod, idle: str | None) -> str:
    """The idle option asked for, else the one the period's report was last built with."""
    chosen = idle or (period.summary or {}).get("idle") or IDLE_CENTRAL
    if chosen not in IDLE_MODES:
        raise ValidationFailed(f"idle must be one of {', '.join(IDLE_MODES)}", code="invalid_idle_mode")
    return str(chosen)


def write_report(
    *, period: BillingPeriod, at: datetime, idle: str | None = None, prepared: PreparedReport | None = None
) -> None:
    """Inside the caller's transaction, with ``period`` locked and not closed. ``prepared``, computed
    before the lock (``prepare_report``), is stored when nothing it was read from has changed since;
    otherwise the report is computed again here, under the lock."""
    mode = idle_mode_of(period, idle)
    if prepared is not None and prepared.mode == mode and prepared.mark == ledger_mark(period=period):
        chargeback = prepared.chargeback
    else:
        chargeback, _ = compute_period_chargeback(period=period, idle=mode)
    store_report(period=period, chargeback=chargeback, mode=mode, at=at)


def store_report(*, period: BillingPeriod, chargeback: Chargeback, mode: str, at: datetime) -> None:
    """Replace the period's lines and summary with this chargeback's; inside the caller's
    transaction, with ``period`` locked and not closed."""
    tenants = {str(t["pk"]): t for t in Tenant.objects.values("pk", "slug", "cost_centre")}
    ReportLine.objects.filter(period=period).delete()
    ReportLine.objects.bulk_create(
        [
            ReportLine(
                period=period,
                line_no=number,
                kind=line.kind,
                tenant_id=line.tenant or None,
                tenant_path=line.tenant_path,
                tenant_slug=tenants[line.tenant]["slug"] if line.tenant in tenants else "",
                cost_centre=tenants[line.tenant]["cost_centre"] if line.tenant in tenants else "",
                pool_name=line.pool,
                flavor_name=line.flavor,
                gpu_model=line.gpu_model,
                currency=line.currency,
                unit_price=line.unit_price,
                ge_hours=line.ge_hours,
                card_hours=line.card_hours,
                amount_exact=line.amount_exact,
                amount=line.amount,
                adjusts=line.adjusts,
                basis=line.basis,
                used_ge_hours=line.used_ge_hours,
                rate_card_ref=line.rate_card,
            )
            for number, line in enumerate(chargeback.lines, start=1)
        ],
        batch_size=2000,
    )
    ReportLine.objects.bulk_create(_credit_lines(period=period, first=len(chargeback.lines) + 1))
    period.summary = {**summary_of(chargeback), "idle": mode}
    period.report_built_at = at
    period.save(update_fields=["summary", "report_built_at"])


def _credit_lines(*, period: BillingPeriod, first: int) -> list[ReportLine]:
    """Finance's manual credits and charges booked in ``period``, as ``credit`` lines after the
    chargeback's (already in the currency's minor unit: nothing to round)."""
    credits = Credit.objects.filter(period=period).select_related("tenant").order_by("created_at", "pk")
    in_period_currency = amount_converter(period=period)  # a credit in a currency with a rate
    return [
        ReportLine(
            period=period,
            line_no=number,
            kind="credit",
            tenant=credit.tenant,
            tenant_path=credit.tenant.path,
            tenant_slug=credit.tenant.slug,
            cost_centre=credit.tenant.cost_centre,
            currency=in_period_currency(credit.amount, credit.currency)[1],
            ge_hours=ZERO,
            card_hours=ZERO,
            amount_exact=in_period_currency(credit.amount, credit.currency)[0],
            amount=in_period_currency(credit.amount, credit.currency)[0],
            note=credit.reason,
        )
        for number, credit in enumerate(credits, start=first)
    ]


def summary_of(chargeback: Chargeback) -> dict[str, Any]:
    slugs = {t["path"]: t["slug"] for t in Tenant.objects.values("path", "slug")}
    return {
        "reconciliation": [
            {
                "pool": r.pool,
                "currency": r.currency,
                "card_hours": str(r.card_hours),
                "charged_card_hours": str(r.charged_card_hours),
                "idle_card_hours": str(r.idle_card_hours),
                "physical_exact": str(r.physical_exact),
                "physical": str(r.physical),
                "lines_total": str(r.lines_total),
                "residue": str(r.residue),
                "holds": r.holds,
            }
            for r in chargeback.reconciliations
        ],
        "rollups": [
            {
                "tenant": slugs.get(r.tenant_path, r.tenant_path),
                "tenant_path": r.tenant_path,
                "currency": r.currency,
                "ge_hours": str(r.ge_hours),
                "card_hours": str(r.card_hours),
                "amount": str(r.amount),
            }
            for r in chargeback.rollups
        ]
        + _unpriced_rollups(chargeback, slugs),
        "unpriced_card_hours": str(chargeback.unpriced_card_hours),
        "unpriced": _unpriced_pools(chargeback),
    }


def _unpriced_rollups(chargeback: Chargeback, slugs: dict[str, str]) -> list[dict[str, Any]]:
    """Each tenant's unpriced usage, rolled up the tree like the priced roll-ups, as rows with no
    currency and no amount: a tenant's GE-hours over its roll-up rows are all it held (what the Usage
    page shows), priced or not."""
    totals: dict[str, list[Decimal]] = {}
    for line in chargeback.lines:
        if line.amount is not None or line.kind == "idle" or not line.tenant_path:
            continue
        parts = [p for p in line.tenant_path.split("/") if p]
        for depth in range(1, len(parts) + 1):
            acc = totals.setdefault("/" + "/".join(parts[:depth]) + "/", [Decimal(0), Decimal(0)])
            acc[0] += line.ge_hours
            acc[1] += line.card_hours
    return [
        {
            "tenant": slugs.get(path, path),
            "tenant_path": path,
            "currency": "",
            "ge_hours": str(ge_hours),
            "card_hours": str(card_hours),
            "amount": None,
        }
        for path, (ge_hours, card_hours) in sorted(totals.items())
    ]


def _unpriced_pools(chargeback: Chargeback) -> list[dict[str, Any]]:
    """The pools (and models) no rate card covered, with their charged and idle card-hours: listed in
    the reconciliation beside the priced ones, so unpriced usage is never just absent from it."""
    pools: dict[tuple[str, str], list[Decimal]] = {}
    for line in chargeback.lines:
        if line.amount is not None or line.kind == "adjustment":
            continue
        acc = pools.setdefault((line.pool, line.gpu_model), [Decimal(0), Decimal(0)])
        acc[0 if line.kind == "charge" else 1] += line.card_hours
    return [
        {
            "pool": pool,
            "gpu_model": model,
            "card_hours": str(charged + idle),
            "charged_card_hours": str(charged),
            "idle_card_hours": str(idle),
        }
        for (pool, model), (charged, idle) in sorted(pools.items())
    ]
