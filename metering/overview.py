"""The finance panel of the overview page: the latest billing periods, their state, the GE-hours
metered and what the built reports charge. One panel only; metering's own pages hold the detail.
Billing periods carry every tenant's totals, so the panel is for finance and platform-admins."""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from typing import Any

from django.db.models import Case, Q, Sum, Value, When

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
    # Charged to tenants (charges, idle shares, adjustments) apart from idle the platform carries,
    # and the card-hours no rate card priced: "charged" never silently includes idle or hides them.
    charged: dict[Any, list[tuple[str, Decimal]]] = defaultdict(list)
    idle: dict[Any, list[tuple[str, Decimal]]] = defaultdict(list)
    unpriced: dict[Any, Decimal] = defaultdict(Decimal)
    for period_id, kind, currency, total, card_hours in (
        ReportLine.objects.visible_to(user)
        .filter(period_id__in=ids)
        .annotate(is_idle=Case(When(kind="idle", then=Value("idle")), default=Value("charged")))
        .values("period_id", "is_idle", "currency")
        .annotate(total=Sum("amount"), unpriced=Sum("card_hours", filter=Q(amount__isnull=True)))
        .order_by("period_id", "is_idle", "currency")
        .values_list("period_id", "is_idle", "currency", "total", "unpriced")
    ):
        if total is not None:
            (idle if kind == "idle" else charged)[period_id].append((currency or "—", total))
        if card_hours:
            unpriced[period_id] += card_hours
    rows = [
        {
            "period": p,
            "ge_hours": ge_hours.get(p.pk),
            "charged": charged.get(p.pk, []),
            "idle": idle.get(p.pk, []),
            "unpriced_card_hours": unpriced.get(p.pk),
        }
        for p in periods
    ]
    return {"finance": {"rows": rows}}
