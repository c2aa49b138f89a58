"""Ledger rows written straight into the tables (as the metering jobs would), for tests that price
and export them: one pool, one node-hour of capacity, allocated and used GE-hours per tenant."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from inventory.models import Cluster, NodePool
from metering.models import BillingPeriod, CapacityHour, RateCard, UsageHour
from metering.services.periods import ensure_period
from tests.inventory import factories as inv
from tests.metering.factories import HOUR

D = Decimal


@dataclass
class Pool:
    cluster: Cluster
    pool: NodePool
    period: BillingPeriod
    model: str = "H100-80GB"


def pool(name: str = "h100", *, hour: datetime = HOUR) -> Pool:
    cluster = inv.cluster()
    return Pool(cluster=cluster, pool=inv.pool(name, on=cluster), period=ensure_period(at=hour))


def capacity(p: Pool, *, cards: int, idle: str, hour: datetime = HOUR, node: str = "n0") -> CapacityHour:
    return CapacityHour.objects.create(
        cluster=p.cluster,
        period=p.period,
        hour=hour,
        node_name=node,
        pool=p.pool,
        pool_name=p.pool.name,
        gpu_model=p.model,
        cards=cards,
        card_hours=D(cards),
        idle_card_hours=D(idle),
    )


def usage(
    p: Pool,
    *,
    tenant: Any,
    meter: str,
    quantity: str,
    card_hours: str = "0",
    hour: datetime = HOUR,
    **extra: Any,
) -> UsageHour:
    return UsageHour.objects.create(
        cluster=p.cluster,
        period=p.period,
        hour=hour,
        share_key=extra.pop("share_key", f"share-{tenant.slug if tenant else 'none'}"),
        meter=meter,
        tenant=tenant,
        pool=p.pool,
        pool_name=p.pool.name,
        node_name=extra.pop("node_name", "n0"),
        gpu_model=p.model,
        quantity=D(quantity),
        card_hours=D(card_hours),
        attribution=extra.pop("attribution", "allocation" if meter == "allocated_ge_hours" else "share"),
        source=extra.pop("source", "ledger" if meter == "allocated_ge_hours" else "prometheus"),
        **extra,
    )


def held(p: Pool, *, tenant: Any, ge_hours: str, hour: datetime = HOUR) -> UsageHour:
    return usage(
        p, tenant=tenant, meter="allocated_ge_hours", quantity=ge_hours, card_hours=ge_hours, hour=hour
    )


def used(p: Pool, *, tenant: Any, ge_hours: str, hour: datetime = HOUR, **extra: Any) -> UsageHour:
    return usage(
        p, tenant=tenant, meter="used_ge_hours", quantity=ge_hours, card_hours="0", hour=hour, **extra
    )


def card(
    p: Pool, *, price: str, basis: str = "allocation", weight: str = "0.5", start: datetime = HOUR
) -> RateCard:
    return RateCard.objects.create(
        gpu_model=p.model,
        currency="USD",
        price_per_ge_hour=D(price),
        basis=basis,
        blend_weight=D(weight),
        effective_from=start.replace(day=1, hour=0),
    )
