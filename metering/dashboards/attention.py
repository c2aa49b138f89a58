"""Metering's items of the overview's "what needs attention" (gpuplatform/ui/attention.py): SLO alerts
firing (platform roles), usage hours of the last week with gaps in their samples (what the viewer may
see of them), and budgets spent to 80 % or more, or forecast over, this month (the budgets the viewer
sees; the forecast rule is metering/dashboards/series.py's). A constant number of queries."""

from __future__ import annotations

from datetime import datetime, timedelta
from fractions import Fraction

from django.urls import reverse
from django.utils import timezone

from gpuplatform.accounts.models import User
from gpuplatform.ui.attention import Attention
from metering.dashboards import series
from metering.models import AlertState, SloAlert, UsageHour
from metering.services.burn import burned_from_ledger
from quotas.models import Budget
from quotas.runner.inputs import month_bounds

GAP_DAYS = 7
BUDGETS_READ = 200


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def attention(user: User) -> list[Attention]:
    now = timezone.now()
    items = _alerts(user) + _gaps(user, now=now) + budget_attention(user, now=now)
    return items


def _alerts(user: User) -> list[Attention]:
    firing = list(
        SloAlert.objects.visible_to(user)
        .filter(state=AlertState.FIRING)
        .select_related("slo")
        .order_by("-opened_at")[:20]
    )
    if not firing:
        return []
    first = firing[0]
    names = sorted({a.slo.name for a in firing})
    return [
        Attention(
            key="slo-alerts-firing",
            severity="critical",
            title=f"{_plural(len(firing), 'SLO alert')} firing",
            detail=f"{', '.join(names[:4])}: the error budget burns faster than the objective allows",
            url=reverse("slo-detail", args=[first.slo_id]) if len(names) == 1 else reverse("slo-list"),
            count=len(firing),
        )
    ]


def _gaps(user: User, *, now: datetime) -> list[Attention]:
    hours = (
        UsageHour.objects.visible_to(user)
        .filter(complete=False, hour__gte=now - timedelta(days=GAP_DAYS))
        .values("cluster_id", "hour")
        .distinct()
        .count()
    )
    if not hours:
        return []
    return [
        Attention(
            key="usage-incomplete",
            severity="warning",
            title=f"{_plural(hours, 'usage hour')} incomplete",
            detail=f"samples missing in the last {GAP_DAYS} days: retried, shown, never read as zero",
            url=reverse("metering-usage"),
            count=hours,
        )
    ]


def budget_attention(user: User, *, now: datetime) -> list[Attention]:
    budgets = list(
        Budget.objects.visible_to(user)
        .select_related("tenant")
        .order_by("tenant__path", "flavor_id")[:BUDGETS_READ]
    )
    if not budgets:
        return []
    month_start, month_end = month_bounds(now)
    burn = burned_from_ledger(
        tenant_ids=sorted({b.tenant_id for b in budgets}, key=str), now=now, month_start=month_start
    )
    flagged: dict[str, list[Budget]] = {"over": [], "near": []}
    for budget in budgets:
        burned = burn.get(budget.tenant_id, {})
        to_date = (
            sum(burned.values(), Fraction(0))
            if budget.flavor_id is None
            else burned.get(budget.flavor_id, Fraction(0))
        )
        forecast = series.month_end_forecast(
            to_date=to_date, month_start=month_start, month_end=month_end, now=now
        )
        state = series.budget_state(limit=Fraction(budget.limit_ge_hours), to_date=to_date, forecast=forecast)
        if state == "over":
            flagged["over"].append(budget)
        elif state in ("near", "heading-over"):
            flagged["near"].append(budget)
    items = []
    for state, severity, words in (
        ("over", "critical", "over budget this month"),
        ("near", "warning", "near the limit or forecast over it"),
    ):
        found = flagged[state]
        if found:
            tenants = sorted({b.tenant.slug for b in found})
            # The link goes to the first tenant the item names (budgets are read in path order,
            # which is by id, not by name).
            first = min(found, key=lambda b: b.tenant.slug)
            items.append(
                Attention(
                    key=f"budgets-{state}",
                    severity=severity,
                    title=f"{_plural(len(found), 'budget')} {words}",
                    detail=f"{', '.join(tenants[:5])}: a hard budget refuses admissions once spent",
                    url=reverse("tenant-dashboard", args=[first.tenant_id]),
                    count=len(found),
                )
            )
    return items
