"""SLO pages: every SLO with where it stands, and one SLO's SLI over time, its burn rates, alerts and
the delivery log. Platform objects: a tenant sees why the list is empty."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from gpuplatform.sli_sources import sli_kind
from gpuplatform.ui.auth import current_user
from metering.slos.models import AlertDelivery, AlertState, SliSample, Slo, SloAlert
from metering.slos.services import standing

PAGE = 25
CHART_HOURS = 48


@login_required
def slo_list(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    rows = Slo.objects.visible_to(user).select_related("tenant").order_by("name")
    page = Paginator(rows, PAGE).get_page(request.GET.get("page"))
    firing = set(
        SloAlert.objects.filter(slo__in=list(page), state=AlertState.FIRING).values_list("slo_id", flat=True)
    )
    items = [
        {"slo": slo, "kind": sli_kind(slo.sli), "now": standing(slo=slo), "firing": slo.pk in firing}
        for slo in page
    ]
    return render(
        request, "metering/slos.html", {"page": page, "items": items, "platform": user.sees_all_tenants}
    )


@login_required
def slo_detail(request: HttpRequest, slo_id: str) -> HttpResponse:
    user = current_user(request)
    slo = get_object_or_404(Slo.objects.visible_to(user).select_related("tenant"), pk=slo_id)
    since = timezone.now() - timedelta(hours=CHART_HOURS)
    per_hour: dict[Any, list[Decimal]] = defaultdict(lambda: [Decimal(0), Decimal(0)])
    for start, good, total in SliSample.objects.filter(slo=slo, start__gte=since).values_list(
        "start", "good", "total"
    ):
        hour = start.replace(minute=0, second=0, microsecond=0)
        per_hour[hour][0] += good
        per_hour[hour][1] += total
    hours = sorted(h for h, (_, total) in per_hour.items() if total)
    chart = {
        "type": "line",
        "stacked": False,
        "horizontal": False,
        "labels": [f"{h:%d %b %H:00}" for h in hours],
        "datasets": [
            {
                "label": "SLI (good / total)",
                "data": [float(per_hour[h][0] / per_hour[h][1]) for h in hours],
                "color": "#0072b2",
            },
            {"label": "objective", "data": [float(slo.objective)] * len(hours), "color": "#d55e00"},
        ],
    }
    alerts = SloAlert.objects.filter(slo=slo).order_by("-opened_at")[:20]
    deliveries = (
        AlertDelivery.objects.filter(alert__slo=slo).select_related("receiver").order_by("-created_at")[:50]
    )
    return render(
        request,
        "metering/slo.html",
        {
            "slo": slo,
            "kind": sli_kind(slo.sli),
            "now": standing(slo=slo),
            "chart": chart,
            "has_chart": bool(hours),
            "alerts": alerts,
            "deliveries": deliveries,
        },
    )
