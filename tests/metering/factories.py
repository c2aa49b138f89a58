"""Small metering rows for API and isolation tests, without metering anything."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from metering.models import (
    AlertDelivery,
    AlertReceiver,
    BillingPeriod,
    CostModel,
    Credit,
    ExchangeRate,
    MetricsSource,
    RateCard,
    ReportJob,
    ReportLine,
    Slo,
    SloAlert,
    Statement,
    UsageHour,
)
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
            "tenant_path": tenant.path,  # as built: who sees a line goes by its path
            "ge_hours": Decimal(1),
            "card_hours": Decimal(1),
            "amount": Decimal("2.50"),
            "currency": "USD",
        },
    )
    return found


def report_job() -> ReportJob:
    """A report job (a platform object: it carries every tenant's files)."""
    found = ReportJob.objects.filter(period=period()).first()
    return found or ReportJob.objects.create(period=period())


def exported_tenant(*, tenant: Any) -> Any:
    """For the streamed export route: ``tenant``, whose id is in any export of its lines (a line of it
    is made), so an export that leaks the line names the tenant."""
    line = report_line(tenant=tenant)
    ReportLine.objects.filter(pk=line.pk).update(
        tenant=tenant, tenant_slug=tenant.slug, tenant_path=tenant.path
    )
    return tenant


def slo(name: str = "gpus") -> Slo:
    """An SLO (a platform object: its SLI spans every tenant)."""
    found, _ = Slo.objects.get_or_create(
        name=name, defaults={"sli": "gpu_health", "objective": Decimal("0.99")}
    )
    return found


def alert_receiver(name: str = "oncall") -> AlertReceiver:
    found, _ = AlertReceiver.objects.get_or_create(name=name, defaults={"url": "https://hooks.example.com/x"})
    return found


def slo_alert(name: str = "gpus") -> SloAlert:
    owner = slo(name)
    found = SloAlert.objects.filter(slo=owner).first()
    return found or SloAlert.objects.create(
        slo=owner, rule="fast_burn", long_burn=Decimal(20), short_burn=Decimal(20), opened_at=HOUR
    )


def alert_delivery(name: str = "gpus") -> AlertDelivery:
    alert = slo_alert(name)
    found, _ = AlertDelivery.objects.get_or_create(
        alert=alert, receiver=alert_receiver(name), event="firing", defaults={"payload": {"event": "firing"}}
    )
    return found


def metrics_source(cluster_name: str = "east") -> MetricsSource:
    found, _ = MetricsSource.objects.get_or_create(
        cluster=inv.cluster(cluster_name), defaults={"url": "http://prometheus.example:9090"}
    )
    return found


def statement(*, tenant: Any, number: str = "") -> Statement:
    """A tenant's statement (not metered: the isolation suite only needs it to exist)."""
    found, _ = Statement.objects.get_or_create(
        number=number or f"2025-03-{tenant.slug}",
        defaults={
            "period": period(),
            "kind": "tenant",
            "tenant": tenant,
            "tenant_slug": tenant.slug,
            "tenant_name": tenant.display_name,
            "currency": "USD",
            "charges": Decimal("2.50"),
            "adjustments": Decimal(0),
            "credits": Decimal(0),
            "total": Decimal("2.50"),
        },
    )
    return found


def credit(*, tenant: Any, reason: str = "") -> Credit:
    found = Credit.objects.filter(tenant=tenant, reason=reason or f"{tenant.slug} goodwill").first()
    return found or Credit.objects.create(
        period=period(),
        tenant=tenant,
        currency="USD",
        amount=Decimal("-5.00"),
        reason=reason or f"{tenant.slug} goodwill",
    )


def exchange_rate(currency: str = "EUR") -> ExchangeRate:
    """An exchange rate of the factories' period (a platform object, like the period)."""
    found, _ = ExchangeRate.objects.get_or_create(
        period=period(),
        currency=currency,
        defaults={"rate": Decimal("1.08"), "source": "ECB reference rate", "as_of": HOUR.date()},
    )
    return found


def cost_model(gpu_model: str = "H100-80GB") -> CostModel:
    found = CostModel.objects.filter(gpu_model=gpu_model).first()
    return found or CostModel.objects.create(
        gpu_model=gpu_model, currency="USD", purchase_price_per_card=Decimal(30000), amortisation_months=48,
        watts_under_load=Decimal(700), price_per_kwh=Decimal("0.12"), price_per_ge_hour=Decimal("1.179244"),
    )  # fmt: skip
