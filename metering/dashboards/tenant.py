"""The tenant dashboard's panels (page ``tenant-dashboard``, rendered by tenants/views.py):

- holding: per flavor, the nominal quota beside what the tenant held, borrowed and used, hour by hour
  over the last 48 hours (quota and holds from quotas' rows, use from the usage ledger);
- waits: median and P95 queue wait of the tenant's admitted requests, per day over 14 days;
- budgets: GE-hours burned this month beside each budget, and the month-end forecast (run rate);
- costs: month-to-date cost and month-end forecast of the tenant's subtree and of each child
  (metering/services/month_to_date.py), for people who may see the tenant's costs.

Every read goes through the scoping door and costs the same queries whatever the rows.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from typing import Any

from django.db.models import Count, Q, Sum
from django.utils import timezone

from gpuplatform.accounts.models import User
from metering.chargeback.forecast import FORMULA
from metering.dashboards import series
from metering.models import Meter, UsageHour
from metering.scoping import CostScopeQuerySet
from metering.services.burn import burned_from_ledger
from metering.services.month_to_date import tenant_costs
from quotas.models import Budget, CapacityRequest, Quota
from quotas.runner.inputs import month_bounds
from tenants.models import Tenant

HOLDING_TEMPLATE = "metering/_tenant_holding.html"
WAITS_TEMPLATE = "metering/_tenant_waits.html"
BUDGETS_TEMPLATE = "metering/_tenant_budgets.html"
COSTS_TEMPLATE = "metering/_tenant_costs.html"
HOURS_SHOWN = 48
DAYS_SHOWN = 14
FLAVORS_SHOWN = 8
# Okabe-Ito (colour-blind safe); each series also has its own dash and point shape.
QUOTA_STYLE = {"color": "#000000", "dash": [6, 4], "point": "line"}
HELD_STYLE = {"color": "#0072b2", "dash": [], "point": "circle"}
BORROWED_STYLE = {"color": "#d55e00", "dash": [2, 2], "point": "triangle"}
USED_STYLE = {"color": "#009e73", "dash": [10, 3, 2, 3], "point": "rect"}


def _now(now: datetime | None) -> datetime:
    return now or timezone.now()


def _hour_floor(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def _num(value: Fraction | Decimal | float | None, places: int = 3) -> float | None:
    return None if value is None else round(float(value), places)


def holding_context(user: User, tenant: Tenant, *, now: datetime | None = None) -> dict[str, Any]:
    now = _now(now)
    # The last HOURS_SHOWN whole hours: the hour under way is not over, its average not yet known.
    first = _hour_floor(now) - timedelta(hours=HOURS_SHOWN)
    hours = [first + timedelta(hours=n) for n in range(HOURS_SHOWN)]
    nominal: dict[str, Fraction] = defaultdict(Fraction)
    for quota in Quota.objects.visible_to(user).filter(tenant=tenant).select_related("flavor"):
        nominal[quota.flavor.name] += quota.nominal * quota.flavor.ge_per_unit().get(
            quota.resource, Fraction(0)
        )
    intervals: dict[str, list[series.Interval]] = defaultdict(list)
    held_rows = (
        CapacityRequest.objects.visible_to(user)
        .filter(tenant=tenant, admitted_at__isnull=False, admitted_at__lt=now)
        .filter(Q(ended_at__isnull=True) | Q(ended_at__gt=first))
        .values_list("flavor__name", "admitted_at", "ended_at", "ge")
    )
    for flavor, start, end, ge in held_rows:
        assert start is not None  # filtered on admitted_at above
        intervals[flavor].append(series.Interval(start=start, end=end, ge=Fraction(Decimal(ge))))
    used: dict[str, dict[datetime, Decimal]] = defaultdict(dict)
    gaps: dict[str, int] = defaultdict(int)
    for row in (
        UsageHour.objects.visible_to(user)
        .filter(tenant=tenant, meter=Meter.USED_GE_HOURS, hour__gte=first, hour__lt=_hour_floor(now))
        .values("flavor_name", "hour")
        .annotate(quantity=Sum("quantity"), gaps=Count("pk", filter=Q(complete=False)))
    ):
        used[row["flavor_name"]][row["hour"]] = row["quantity"]
        gaps[row["flavor_name"]] += row["gaps"]
    flavors = sorted(set(nominal) | set(intervals) | set(used))[:FLAVORS_SHOWN]
    labels = [h.strftime("%d %H:00") for h in hours]
    charts = []
    for index, flavor in enumerate(flavors):
        rows = series.hourly_holding(
            intervals=intervals.get(flavor, []),
            nominal=nominal.get(flavor, Fraction(0)),
            hours=hours,
            now=now,
        )
        flavor_used = used.get(flavor, {})
        used_values = [_num(flavor_used.get(h)) for h in hours]
        charts.append(
            {
                "id": f"holding-{index}",
                "flavor": flavor or "(no flavor)",
                "nominal": _num(nominal.get(flavor, Fraction(0))),
                "peak_held": _num(max(r.held for r in rows)),
                "peak_borrowed": _num(max(r.borrowed for r in rows)),
                "used_ge_hours": _num(sum((flavor_used.values()), Decimal(0))),
                "gaps": gaps.get(flavor, 0),
                "chart": {
                    "type": "line",
                    "horizontal": False,
                    "stacked": False,
                    "unit": "GE",
                    "labels": labels,
                    "datasets": [
                        {"label": "nominal quota", "data": [_num(nominal.get(flavor, 0))] * len(hours)}
                        | QUOTA_STYLE,
                        {"label": "held", "data": [_num(r.held) for r in rows]} | HELD_STYLE,
                        {"label": "borrowed", "data": [_num(r.borrowed) for r in rows]} | BORROWED_STYLE,
                        {"label": "used", "data": used_values} | USED_STYLE,
                    ],
                },
            }
        )
    return {"holding_charts": charts, "hours_shown": HOURS_SHOWN}


def waits_context(user: User, tenant: Tenant, *, now: datetime | None = None) -> dict[str, Any]:
    now = _now(now)
    today = now.date()
    days = [today - timedelta(days=DAYS_SHOWN - 1 - n) for n in range(DAYS_SHOWN)]
    since = datetime.combine(days[0], datetime.min.time(), tzinfo=now.tzinfo)
    rows = (
        CapacityRequest.objects.visible_to(user)
        .filter(tenant=tenant, admitted_at__gte=since, admitted_at__lte=now)
        .values_list("admitted_at", "created_at")
    )
    waits = [
        (admitted, max(0.0, (admitted - created).total_seconds()))
        for admitted, created in rows
        if admitted is not None
    ]
    per_day = series.daily_waits(waits=waits, days=days)
    minutes = [
        (None if d.median_seconds is None else round(d.median_seconds / 60, 2),
         None if d.p95_seconds is None else round(d.p95_seconds / 60, 2))
        for d in per_day
    ]  # fmt: skip
    chart = {
        "type": "line",
        "horizontal": False,
        "stacked": False,
        "unit": "min",
        "labels": [d.day.isoformat() for d in per_day],
        "datasets": [
            {"label": "median wait", "data": [m for m, _ in minutes]} | HELD_STYLE,
            {"label": "P95 wait", "data": [p for _, p in minutes]} | BORROWED_STYLE,
        ],
    }
    return {
        "wait_days": [d for d in per_day if d.admitted],
        "wait_chart": chart,
        "has_waits": any(d.admitted for d in per_day),
        "days_shown": DAYS_SHOWN,
    }


def budgets_context(user: User, tenant: Tenant, *, now: datetime | None = None) -> dict[str, Any]:
    now = _now(now)
    month_start, month_end = month_bounds(now)
    budgets = list(
        Budget.objects.visible_to(user)
        .filter(tenant=tenant)
        .select_related("flavor")
        .order_by("flavor__name")
    )
    burn = burned_from_ledger(tenant_ids=[tenant.pk], now=now, month_start=month_start) if budgets else {}
    burned = burn.get(tenant.pk, {})
    rows = []
    for budget in budgets:
        if budget.flavor_id is None:
            to_date = sum(burned.values(), Fraction(0))
        else:
            to_date = burned.get(budget.flavor_id, Fraction(0))
        forecast = series.month_end_forecast(
            to_date=to_date, month_start=month_start, month_end=month_end, now=now
        )
        limit = Fraction(budget.limit_ge_hours)
        rows.append(
            {
                "budget": budget,
                "label": budget.flavor.name if budget.flavor else "every flavor",
                "limit": _num(limit, 2),
                "to_date": _num(to_date, 2),
                "forecast": _num(forecast, 2),
                "percent": None if limit <= 0 else round(float(to_date / limit * 100)),
                "state": series.budget_state(limit=limit, to_date=to_date, forecast=forecast),
            }
        )
    chart = {
        "type": "bar",
        "horizontal": True,
        "stacked": False,
        "unit": "GE-hours",
        "labels": [r["label"] for r in rows],
        "datasets": [
            {"label": "burned to date", "data": [r["to_date"] for r in rows]} | HELD_STYLE,
            {"label": "month-end forecast", "data": [r["forecast"] for r in rows], "outline": True}
            | BORROWED_STYLE,
            {"label": "budget", "data": [r["limit"] for r in rows], "outline": True} | QUOTA_STYLE,
        ],
    }
    return {
        "budget_rows": rows,
        "budget_chart": chart,
        "month_start": month_start,
        "month_end": month_end,
    }


def costs_context(user: User, tenant: Tenant, *, now: datetime | None = None) -> dict[str, Any]:
    """The month's cost so far and its forecast, the subtree and a row per child; shown to whoever
    sees the tenant's costs (its people and those of the tenants above it)."""
    if not CostScopeQuerySet(model=Tenant).visible_to(user).filter(pk=tenant.pk).exists():
        return {"costs": None}
    found = tenant_costs(tenant=tenant, now=now)
    rows = [("All of " + tenant.slug, found.costs.subtree)] + [
        (found.children[row.tenant_path][1], row) for row in found.costs.children
    ]
    currencies = sorted({t.currency for _, row in rows for t in row.totals})
    shown = currencies[0] if currencies else ""
    table = [
        {
            "label": label,
            "totals": row.totals,
            "unpriced_ge_hours": _num(row.unpriced_ge_hours, 2),
        }
        for label, row in rows
    ]

    def figure(row: Any, name: str) -> float | None:
        return next((_num(getattr(t, name), 2) for t in row.totals if t.currency == shown), 0.0)

    chart = {
        "type": "bar",
        "horizontal": True,
        "stacked": False,
        "unit": shown,
        "labels": [label for label, _ in rows],
        "datasets": [
            {"label": "month to date", "data": [figure(row, "month_to_date") for _, row in rows]}
            | HELD_STYLE,
            {
                "label": "month-end forecast",
                "data": [figure(row, "forecast") for _, row in rows],
                "outline": True,
            }
            | BORROWED_STYLE,
        ],
    }
    return {"costs": found, "cost_rows": table, "cost_chart": chart, "cost_formula": FORMULA}
