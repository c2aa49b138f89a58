"""A tenant's month-to-date cost and month-end forecast (formula: metering/chargeback/forecast.py).

Reads only. The month so far is the period's chargeback as a build would make it now (the report
engine itself, so the figures are the ones the period's statement will carry once nothing changes),
summed over the tenant's subtree; what is admitted is quotas' holding requests, priced by the rate
cards in force over the hours they still have this month. Costs the same queries whatever the rows.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from fractions import Fraction

from django.utils import timezone

from metering.chargeback.forecast import Committed, CostForecast, Spent, forecast
from metering.models import BillingPeriod, Credit, PeriodState
from metering.services.burn import ledger_metered_until
from metering.services.currency import amount_converter
from metering.services.periods import month_of
from metering.services.pricing import load_cards, price_segments
from metering.services.reports import compute_period_chargeback, idle_mode_of
from quotas.models import CapacityRequest
from quotas.models.requests import HOLDING
from tenants.models import Tenant


@dataclass(frozen=True)
class TenantCosts:
    tenant: Tenant
    period: str
    month_start: datetime
    month_end: datetime
    metered_until: datetime
    costs: CostForecast
    children: dict[str, tuple[uuid.UUID, str]]  # a child's path -> (id, slug)


def _spent(*, tenant: Tenant, period: BillingPeriod | None) -> list[Spent]:
    if period is None or period.state == PeriodState.CLOSED:
        return []
    chargeback, _ = compute_period_chargeback(period=period, idle=idle_mode_of(period, None))
    spent = [
        Spent(line.tenant_path, line.currency, line.amount)
        for line in chargeback.lines
        if line.tenant and line.amount is not None and line.tenant_path.startswith(tenant.path)
    ]
    credits = Credit.objects.filter(period=period, tenant__path__startswith=tenant.path)
    convert = amount_converter(period=period)  # as the report will book them
    for path, currency, amount in credits.values_list("tenant__path", "currency", "amount"):
        booked, booked_currency = convert(amount, currency)
        spent.append(Spent(path, booked_currency, booked))
    return spent


def _committed(*, tenant: Tenant, since: datetime, month_end: datetime) -> list[Committed]:
    """Each holding request's GE-hours from ``since`` (or its admission) to its expiry or month end,
    cut where its price changes."""
    cards = load_cards(start=since, end=month_end)
    rows = (
        CapacityRequest.objects.filter(
            tenant__path__startswith=tenant.path, state__in=HOLDING, admitted_at__isnull=False
        )
        .values_list(
            "tenant__path", "ge", "admitted_at", "expires_at", "flavor__pool_id", "flavor__gpu_model"
        )
        .order_by("admitted_at", "pk")
    )
    committed: list[Committed] = []
    for path, ge, admitted_at, expires_at, pool_id, gpu_model in rows:
        assert admitted_at is not None  # filtered on above
        start = max(admitted_at, since)
        end = min(expires_at or month_end, month_end)
        if end <= start:
            continue
        for segment in price_segments(
            cards=cards, pool_id=pool_id, gpu_model=gpu_model or "", start=start, end=end
        ):
            ge_hours = Fraction(Decimal(ge)) * Fraction(
                int((segment.end - segment.start).total_seconds()), 3600
            )
            card = segment.card
            committed.append(
                Committed(
                    path,
                    ge_hours,
                    card.currency if card else "",
                    card.price_per_ge_hour if card else None,
                )
            )
    return committed


def tenant_costs(*, tenant: Tenant, now: datetime | None = None) -> TenantCosts:
    """``tenant``'s subtree this month: spent so far, admitted, forecast; and each direct child's.
    The caller has checked that the viewer may see the tenant's costs."""
    now = now or timezone.now()
    label, month_start, month_end = month_of(at=now)
    period = BillingPeriod.objects.filter(label=label).first()
    until = ledger_metered_until(month_start=month_start, now=now)
    children = {
        path: (pk, slug)
        for path, pk, slug in Tenant.objects.filter(parent=tenant)
        .order_by("slug")
        .values_list("path", "pk", "slug")
    }
    costs = forecast(
        root_path=tenant.path,
        child_paths=list(children),
        spent=_spent(tenant=tenant, period=period),
        committed=_committed(tenant=tenant, since=until, month_end=month_end),
    )
    return TenantCosts(tenant, label, month_start, month_end, until, costs, children)
