"""Metering's REST: tenants read their own usage and cost, finance prices and closes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from metering.models import BillingPeriod, PeriodState
from tests.metering import factories as met

pytestmark = pytest.mark.django_db


def test_a_tenant_reads_only_its_own_usage_and_report_lines(cast, api):
    mine, theirs = met.usage(tenant=cast.vision), met.usage(tenant=cast.nlp)
    body = api(cast.alice).get("/api/v1/usage/").json()
    assert [row["id"] for row in body["results"]] == [mine.pk]
    assert api(cast.alice).get(f"/api/v1/usage/{theirs.pk}/").status_code == 404
    assert {row["id"] for row in api(cast.fiona).get("/api/v1/usage/?tenant=nlp").json()["results"]} == {
        theirs.pk
    }
    met.report_line(tenant=cast.nlp)
    assert api(cast.alice).get("/api/v1/reports/").json()["results"] == []
    assert api(cast.bob).get("/api/v1/reports/?period=2025-03").json()["results"][0]["amount"] == "2.5000"


def test_finance_creates_a_rate_card_and_a_tenant_cannot(cast, api):
    body = {
        "gpu_model": "T4",
        "currency": "EUR",
        "price_per_ge_hour": "0.35",
        "effective_from": "2025-03-01T00:00Z",
    }
    refused = api(cast.alice).post("/api/v1/rate-cards/", body, format="json")
    assert refused.status_code == 403
    assert refused["Content-Type"].startswith("application/problem+json")
    created = api(cast.fiona).post("/api/v1/rate-cards/", body, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["price_per_ge_hour"] == "0.350000"
    again = api(cast.fiona).post("/api/v1/rate-cards/", body, format="json")
    assert (again.status_code, again.json()["code"]) == (409, "rate_card_overlap")
    ended = api(cast.fiona).post(
        f"/api/v1/rate-cards/{created.json()['id']}/end/",
        {"effective_to": "2025-04-01T00:00Z"},
        format="json",
    )
    assert ended.json()["effective_to"] == "2025-04-01T00:00:00Z"
    # alice reads the model's price she pays
    assert [c["gpu_model"] for c in api(cast.alice).get("/api/v1/rate-cards/").json()["results"]] == ["T4"]


def test_finance_closes_a_past_period_once(cast, api):
    period = BillingPeriod.objects.create(
        label="2024-01",
        starts_at=datetime(2024, 1, 1, tzinfo=UTC),
        ends_at=datetime(2024, 2, 1, tzinfo=UTC),
        timezone="UTC",
    )
    assert api(cast.alice).post(f"/api/v1/billing-periods/{period.pk}/close/").status_code == 404
    # open -> closing -> closed: straight from open is refused, and changes nothing.
    early = api(cast.fiona).post(f"/api/v1/billing-periods/{period.pk}/close/")
    assert (early.status_code, early.json()["code"]) == (409, "period_not_closing")
    period.refresh_from_db()
    assert period.state == PeriodState.OPEN
    assert api(cast.fiona).post(f"/api/v1/billing-periods/{period.pk}/start-closing/").status_code == 200
    closed = api(cast.fiona).post(f"/api/v1/billing-periods/{period.pk}/close/")
    assert closed.status_code == 200, closed.content
    assert closed.json()["state"] == PeriodState.CLOSED
    twice = api(cast.fiona).post(f"/api/v1/billing-periods/{period.pk}/close/")
    assert (twice.status_code, twice.json()["code"]) == (409, "period_closed")
