"""Small metering rows for API and isolation tests, without metering anything."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from metering.models import BillingPeriod, MetricsSource, RateCard, ReportLine, UsageHour
from metering.services.periods import ensure_period
from tests.inventory import factories as inv
from tests.quotas import factories as adm

HOUR = datetime(2025, 3, 10, 10, tzinfo=UTC)


def period() -> BillingPeriod:
    return ensure_period(at=HOUR)


def usage(*, tenant: Any) -> UsageHour:
    found, _ = UsageHour.objects.get_or_create(
        cluster=inv.cluster(),
        share_key=f"share-{tenant.slug}",
        meter="allocated_ge_hours",
        hour=HOUR,
        defaults={
            "period": period(),
            "tenant": tenant,
            "quantity": Decimal(1),
            "card_hours": Decimal(1),
            "attribution": "allocation",
            "source": "ledger",
        },
    )
    return found


def rate_card(*, tenant: Any) -> RateCard:
    flavor = adm.flavor(tenant=tenant)
    found, _ = RateCard.objects.get_or_create(
        gpu_model="H100-80GB",
        flavor=flavor,
        defaults={"currency": "USD", "price_per_ge_hour": Decimal("2.5"), "effective_from": HOUR},
    )
    return found


def report_line(*, tenant: Any) -> ReportLine:
    found, _ = ReportLine.objects.get_or_create(
        period=period(),
        line_no=1,
        defaults={
            "kind": "charge",
            "tenant": tenant,
            "tenant_slug": tenant.slug,
            "ge_hours": Decimal(1),
            "card_hours": Decimal(1),
            "amount": Decimal("2.50"),
            "currency": "USD",
        },
    )
    return found


def metrics_source(cluster_name: str = "east") -> MetricsSource:
    found, _ = MetricsSource.objects.get_or_create(
        cluster=inv.cluster(cluster_name), defaults={"url": "http://prometheus.example:9090"}
    )
    return found
