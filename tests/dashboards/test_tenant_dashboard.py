"""The tenant dashboard (/tenants/<id>/dashboard/): quota against held, borrowed and used per flavor
over time, queue waits, and budgets with a month-end forecast, worked by hand on PostgreSQL; then the
page as a user sees it, its empty states, and another tenant's dashboard as a 404."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from metering.dashboards.tenant import budgets_context, holding_context, waits_context
from metering.models import UsageHour
from metering.services.periods import ensure_period
from quotas.models import Budget, CapacityRequest, Quota
from tests.inventory import factories as inv
from tests.quotas import factories as adm

pytestmark = pytest.mark.django_db

GPU = "nvidia.com/gpu"
NOW = datetime(2025, 3, 11, 0, 0, tzinfo=UTC)  # 10 days into March's 31


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2025, 3, day, hour, minute, tzinfo=UTC)


def request(tenant, *, created, admitted, ended=None, ge=1, state="active") -> CapacityRequest:
    return adm.held_request(
        tenant=tenant, ge=ge, created=created, admitted=admitted, ended=ended, state=state
    )


def used(tenant, *, hour: datetime, quantity: str, complete: bool = True) -> None:
    UsageHour.objects.create(
        cluster=inv.cluster(),
        period=ensure_period(at=hour),
        hour=hour,
        share_key=f"share-{hour:%d%H}",
        meter="used_ge_hours",
        tenant=tenant,
        flavor_name=adm.flavor().name,
        quantity=Decimal(quantity),
        attribution="allocation",
        source="simulated",
        complete=complete,
    )


@pytest.fixture
def vision_month(cast):
    """vision: a quota of 1 GPU (1 GE) of shared-h100, a 50 GE-hour monthly budget, four requests."""
    Quota.objects.create(tenant=cast.vision, flavor=adm.flavor(), resource=GPU, nominal=1)
    Budget.objects.create(tenant=cast.vision, flavor=None, limit_ge_hours=Decimal(50))
    request(cast.vision, created=at(9, 8), admitted=at(9, 9), ended=at(9, 10))  # waited 3600 s
    request(cast.vision, created=at(10, 9, 50), admitted=at(10, 10), ended=at(10, 10, 30))  # 600 s
    request(cast.vision, created=at(10, 10, 10), admitted=at(10, 10, 15))  # 300 s, still held
    request(cast.vision, created=at(10, 11), admitted=at(10, 11, 2), ended=at(10, 12), ge=2)  # 120 s
    request(cast.vision, created=at(10, 23), admitted=None, state="pending")  # never admitted
    used(cast.vision, hour=at(10, 10), quantity="0.8")
    used(cast.vision, hour=at(10, 11), quantity="1.5", complete=False)
    return cast


def test_held_and_borrowed_per_hour_beside_the_quota_and_the_use(vision_month):
    cast = vision_month
    context = holding_context(cast.alice, cast.vision, now=NOW)
    [chart] = context["holding_charts"]
    data = {
        s["label"]: dict(zip(chart["chart"]["labels"], s["data"], strict=True))
        for s in chart["chart"]["datasets"]
    }
    # the 48 whole hours before 11 March 00:00: 9 March 00:00 to 10 March 23:00
    assert chart["chart"]["labels"][0] == "09 00:00" and chart["chart"]["labels"][-1] == "10 23:00"
    # 10 March 10:00: 1 GE 10:00-10:15, 2 GE 10:15-10:30, 1 GE 10:30-11:00 -> 1/4 + 2/4 + 2/4 = 1.25 held,
    # 1 GE above the 1 GE quota for a quarter hour -> 0.25 borrowed; the ledger measured 0.8 used
    assert (data["held"]["10 10:00"], data["borrowed"]["10 10:00"], data["used"]["10 10:00"]) == (
        1.25,
        0.25,
        0.8,
    )
    # 11:00: 1 GE for 2 min, then 1 + 2 = 3 GE for 58 min -> (2 + 174) / 60 = 2.933 held;
    # 2 GE above quota for 58 min -> 116 / 60 = 1.933 borrowed
    assert (data["held"]["10 11:00"], data["borrowed"]["10 11:00"]) == (2.933, 1.933)
    # 9 March 09:00: the first request alone, 1 GE, within quota; the quota line is flat at 1 GE
    assert (data["held"]["09 09:00"], data["borrowed"]["09 09:00"]) == (1.0, 0.0)
    assert set(data["nominal quota"].values()) == {1.0}
    assert (chart["nominal"], chart["peak_held"], chart["peak_borrowed"]) == (1.0, 2.933, 1.933)
    # used 0.8 + 1.5 GE-hours, of which one hour had gaps in its samples
    assert (chart["used_ge_hours"], chart["gaps"]) == (2.3, 1)


def test_queue_waits_per_day_by_nearest_rank(vision_month):
    cast = vision_month
    context = waits_context(cast.alice, cast.vision, now=NOW)
    # 9 March: one wait of 3600 s. 10 March: 600, 300, 120 -> median (rank 2) 300 s, P95 (rank 3) 600 s.
    # The pending request has no wait yet. 11 March (today, just begun): none admitted.
    assert [(d.day.day, d.admitted, d.median_seconds, d.p95_seconds) for d in context["wait_days"]] == [
        (9, 1, 3600.0, 3600.0),
        (10, 3, 300.0, 600.0),
    ]
    # the chart in minutes: 60 / 60 on the 9th, 5 / 10 on the 10th
    median, p95 = context["wait_chart"]["datasets"]
    assert (median["data"][-3], p95["data"][-3], median["data"][-2], p95["data"][-2]) == (
        60.0,
        60.0,
        5.0,
        10.0,
    )


def test_budget_burn_to_date_and_the_month_end_forecast(vision_month):
    cast = vision_month
    [row] = budgets_context(cast.alice, cast.vision, now=NOW)["budget_rows"]
    # burned this month (no hour on the ledger yet, so the request intervals):
    #   9 March 09-10:       1 GE x 1 h            = 1
    #   10 March 10:00-10:30: 1 GE x 0.5 h          = 0.5
    #   10 March 10:15 on:   1 GE x 13.75 h to now = 13.75
    #   10 March 11:02-12:00: 2 GE x 58/60 h        = 1.9333
    #   total 17.1833 GE-hours; 10 of March's 31 days gone -> forecast 17.1833 x 31 / 10 = 53.27
    assert (row["limit"], row["to_date"], row["forecast"], row["percent"]) == (50.0, 17.18, 53.27, 34)
    # 34 % spent, but the run rate ends the month above 50: forecast over
    assert row["state"] == "heading-over"


def test_the_page_shows_the_figures_and_hides_other_tenants(cast, client):
    now = timezone.now()
    hour = now.replace(minute=0, second=0, microsecond=0)
    Quota.objects.create(tenant=cast.vision, flavor=adm.flavor(), resource=GPU, nominal=1)
    # 2 GE held through the hour before last, against a 1 GE quota: 2 held, 1 borrowed
    request(
        cast.vision,
        created=hour - timedelta(hours=3),
        admitted=hour - timedelta(hours=2, minutes=55),
        ended=hour - timedelta(hours=1),
        ge=2,
    )
    client.force_login(cast.alice)
    html = client.get(f"/tenants/{cast.vision.pk}/dashboard/").content.decode()
    assert "nominal 1.0 GE · peak held 2.0 GE · peak borrowed 1.0 GE" in html
    # waited 5 minutes: the day's median and P95 both 300 s
    assert '<td class="num">300 s</td><td class="num">300 s</td>' in html
    assert 'data-chart="tenant-waits-data"' in html and 'id="tenant-waits-data"' in html
    # no budget: the empty state says so and where budgets are set
    assert "No budget set for this tenant" in html
    # nlp's dashboard is not alice's to see, nor charlie's (no tenant)
    assert client.get(f"/tenants/{cast.nlp.pk}/dashboard/").status_code == 404
    client.force_login(cast.charlie)
    assert client.get(f"/tenants/{cast.vision.pk}/dashboard/").status_code == 404


def test_an_empty_tenant_gets_a_sentence_per_panel(cast, client):
    client.force_login(cast.bob)
    html = client.get(f"/tenants/{cast.nlp.pk}/dashboard/").content.decode()
    assert "No quota, no held request and no measured use in the last 48 hours" in html
    assert "No request of this tenant was admitted in the last 14 days" in html
    assert "No budget set for this tenant" in html
    assert "<canvas" not in html


def test_the_tenant_page_links_its_dashboard(cast, client):
    client.force_login(cast.alice)
    html = client.get(f"/tenants/{cast.vision.pk}/").content.decode()
    assert f'href="/tenants/{cast.vision.pk}/dashboard/"' in html
