"""A billing period's chargeback report: read the ledger in aggregate, price it, hand it to the
pure chargeback, store its lines. Rebuilt at will while the period is open or closing; frozen once
closed (the database refuses new lines then)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from gpuplatform.errors import Conflict, NotFound
from metering.chargeback.report import Chargeback, PoolCapacity, PricedUsage, compute_chargeback
from metering.models import Adjustment, BillingPeriod, CapacityHour, Meter, PeriodState, ReportLine, UsageHour
from metering.services.pricing import load_cards, price_segments
from tenants.models import Tenant

ZERO = Decimal(0)
_HOUR = timedelta(hours=1)


def compute_period_chargeback(*, period: BillingPeriod) -> tuple[Chargeback, dict[str, str]]:
    """The period's chargeback and the pool labels (pool id -> "cluster/pool"). Reads only."""
    cards = load_cards(start=period.starts_at, end=period.ends_at)
    tenants = {str(t["pk"]): t for t in Tenant.objects.values("pk", "path", "slug", "cost_centre")}
    pools: dict[tuple[Any, str], str] = {}
    for row in (
        CapacityHour.objects.filter(period=period)
        .values("pool_id", "cluster__name", "pool_name", "gpu_model")
        .distinct()
    ):
        pools[(row["pool_id"], row["gpu_model"])] = f"{row['cluster__name']}/{row['pool_name']}"
    for row in (
        UsageHour.objects.filter(period=period, meter=Meter.ALLOCATED_GE_HOURS)
        .values("pool_id", "cluster__name", "pool_name", "gpu_model")
        .distinct()
    ):
        pools.setdefault((row["pool_id"], row["gpu_model"]), f"{row['cluster__name']}/{row['pool_name']}")
    usage: list[PricedUsage] = []
    capacity: list[PoolCapacity] = []
    for (pool_id, model), label in sorted(pools.items(), key=lambda item: (item[1], item[0][1])):
        for seg in price_segments(
            cards=cards, pool_id=pool_id, gpu_model=model, start=period.starts_at, end=period.ends_at
        ):
            price = seg.card.price_per_ge_hour if seg.card else None
            currency = seg.card.currency if seg.card else ""
            hours = {"hour__gte": seg.start, "hour__lt": seg.end, "pool_id": pool_id, "gpu_model": model}
            for agg in (
                UsageHour.objects.filter(period=period, meter=Meter.ALLOCATED_GE_HOURS, **hours)
                .values("tenant_id", "flavor_name")
                .annotate(ge_hours=Sum("quantity"), card_hours=Sum("card_hours"))
                .order_by("tenant_id", "flavor_name")
            ):
                tenant = tenants.get(str(agg["tenant_id"])) if agg["tenant_id"] else None
                usage.append(
                    PricedUsage(
                        tenant=str(agg["tenant_id"] or ""),
                        tenant_path=tenant["path"] if tenant else "",
                        pool=label,
                        flavor=agg["flavor_name"],
                        gpu_model=model,
                        currency=currency,
                        unit_price=price,
                        ge_hours=agg["ge_hours"] or ZERO,
                        card_hours=agg["card_hours"] or ZERO,
                    )
                )
            totals = CapacityHour.objects.filter(period=period, **hours).aggregate(
                card_hours=Sum("card_hours"), idle=Sum("idle_card_hours")
            )
            if totals["card_hours"] is not None:
                capacity.append(
                    PoolCapacity(
                        pool=label,
                        gpu_model=model,
                        currency=currency,
                        unit_price=price,
                        card_hours=totals["card_hours"],
                        idle_card_hours=totals["idle"],
                    )
                )
    usage.extend(_priced_adjustments(period=period, tenants=tenants))
    return compute_chargeback(usage=usage, capacity=capacity), pools_by_id(pools)


def pools_by_id(pools: dict[tuple[Any, str], str]) -> dict[str, str]:
    return {str(pool_id): label for (pool_id, _), label in pools.items()}


def _priced_adjustments(*, period: BillingPeriod, tenants: dict[str, Any]) -> Iterator[PricedUsage]:
    """Adjustments booked into ``period``, each priced at the rate of the hour it corrects."""
    rows = list(
        Adjustment.objects.filter(period=period, meter=Meter.ALLOCATED_GE_HOURS)
        .select_related("adjusts_period", "cluster")
        .order_by("hour", "share_key", "created_at")
    )
    if not rows:
        return
    # The corrected hours lie in earlier periods: their prices, not this period's.
    old_cards = load_cards(start=min(r.hour for r in rows), end=max(r.hour for r in rows) + _HOUR)
    for r in rows:
        seg = price_segments(
            cards=old_cards, pool_id=r.pool_id, gpu_model=r.gpu_model, start=r.hour, end=r.hour + _HOUR
        )
        card = seg[0].card if seg else None
        tenant = tenants.get(str(r.tenant_id)) if r.tenant_id else None
        yield PricedUsage(
            tenant=str(r.tenant_id or ""),
            tenant_path=tenant["path"] if tenant else "",
            pool=f"{r.cluster.name}/{r.pool_name}",
            flavor=r.flavor_name,
            gpu_model=r.gpu_model,
            currency=card.currency if card else "",
            unit_price=card.price_per_ge_hour if card else None,
            ge_hours=r.quantity_delta,
            card_hours=r.card_hours_delta,
            kind="adjustment",
            adjusts=r.adjusts_period.label,
        )


def build_period_report(*, period_id: uuid.UUID, at: datetime | None = None) -> BillingPeriod:
    """Replace the period's report lines and summary with a fresh build. Locks the period; refused
    once it is closed. Idempotent: the same ledger gives the same lines."""
    with transaction.atomic():
        period = BillingPeriod.objects.select_for_update().filter(pk=period_id).first()
        if period is None:
            raise NotFound("No such billing period.")
        if period.state == PeriodState.CLOSED:
            raise Conflict(f"billing period {period.label} is closed", code="period_closed")
        write_report(period=period, at=at or timezone.now())
    return period


def write_report(*, period: BillingPeriod, at: datetime) -> None:
    """Inside the caller's transaction, with ``period`` locked and not closed."""
    chargeback, _ = compute_period_chargeback(period=period)
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
            )
            for number, line in enumerate(chargeback.lines, start=1)
        ],
        batch_size=2000,
    )
    period.summary = summary_of(chargeback)
    period.report_built_at = at
    period.save(update_fields=["summary", "report_built_at"])


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
        ],
        "unpriced_card_hours": str(chargeback.unpriced_card_hours),
    }
