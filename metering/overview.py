"""The finance panel of the overview page: the latest billing periods, their state, the GE-hours
metered and what the built reports charge. One panel only; metering's own pages hold the detail.
Billing periods carry every tenant's totals, so the panel is for finance and platform-admins."""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from typing import Any

from django.db.models import Sum

from gpuplatform.accounts.models import User
from metering.models import BillingPeriod, ReportLine, UsageHour
from metering.models.usage import Meter

TEMPLATE = "ui/_finance_panel.html"
PERIODS_SHOWN = 4


def overview_context(user: User) -> dict[str, Any]:
    if not user.sees_all_tenants:
        return {"finance": None}
    periods = list(BillingPeriod.objects.visible_to(user)[:PERIODS_SHOWN])
    ids = [p.pk for p in periods]
    ge_hours = dict(
        UsageHour.objects.visible_to(user)
        .filter(period_id__in=ids, meter=Meter.ALLOCATED_GE_HOURS)
        .values("period_id")
        .annotate(total=Sum("quantity"))
        .values_list("period_id", "total")
    )
    charged: dict[Any, list[tuple[str, Decimal]]] = defaultdict(list)
    for period_id, currency, total in (
        ReportLine.objects.visible_to(user)
        .filter(period_id__in=ids)
        .values("period_id", "currency")
        .annotate(total=Sum("amount"))
        .order_by("period_id", "currency")
        .values_list("period_id", "currency", "total")
    ):
        if total is not None:
            charged[period_id].append((currency or "—", total))
    rows = [{"period": p, "ge_hours": ge_hours.get(p.pk), "charged": charged.get(p.pk, [])} for p in periods]
    return {"finance": {"rows": rows}}
