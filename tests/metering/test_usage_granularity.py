"""/api/v1/usage/?granularity=hour|day|month: sums made by the database, days and months cut in the
billing timezone; filters still apply; a tenant sums only its own rows; bad values are problems."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.metering import rows
from tests.metering.factories import HOUR

pytestmark = pytest.mark.django_db


@pytest.fixture
def berlin_rows(settings, cast):
    settings.BILLING_TIMEZONE = "Europe/Berlin"  # UTC+1 in March (before the 30th)
    p = rows.pool()
    rows.held(p, tenant=cast.vision, ge_hours="1")  # 2025-03-10 10:00Z
    rows.held(p, tenant=cast.vision, ge_hours="0.5", hour=HOUR + timedelta(hours=1))
    rows.usage(  # 23:00Z is already the 11th in Berlin
        p, tenant=cast.vision, meter="allocated_ge_hours", quantity="0.25", card_hours="0.25",
        hour=HOUR + timedelta(hours=13), share_key="late-share", complete=False,
    )  # fmt: skip
    rows.held(p, tenant=cast.nlp, ge_hours="2")
    return p


def buckets(client, query):
    got = client.get(f"/api/v1/usage/?{query}")
    assert got.status_code == 200, got.content
    return [
        (r["bucket"], r["tenant_slug"], r["quantity"], r["rows"], r["incomplete_rows"])
        for r in got.json()["results"]
    ]


def test_days_are_cut_in_the_billing_timezone(berlin_rows, cast, api):
    assert buckets(api(cast.fiona), "granularity=day&tenant=vision") == [
        ("2025-03-09T23:00:00Z", "vision", "1.500000000", 2, 0),  # the 10th in Berlin
        ("2025-03-10T23:00:00Z", "vision", "0.250000000", 1, 1),  # the 11th, with its gap counted
    ]


def test_a_month_sums_everything_and_a_tenant_sees_only_its_own(berlin_rows, cast, api):
    assert buckets(api(cast.fiona), "granularity=month") == [
        ("2025-02-28T23:00:00Z", "nlp", "2.000000000", 1, 0),
        ("2025-02-28T23:00:00Z", "vision", "1.750000000", 3, 1),
    ]
    assert buckets(api(cast.alice), "granularity=month") == [
        ("2025-02-28T23:00:00Z", "vision", "1.750000000", 3, 1)
    ]


def test_hours_with_a_time_range(berlin_rows, cast, api):
    query = "granularity=hour&hour_from=2025-03-10T10:00:00Z&hour_to=2025-03-10T11:00:00Z"
    assert buckets(api(cast.fiona), query) == [
        ("2025-03-10T10:00:00Z", "nlp", "2.000000000", 1, 0),
        ("2025-03-10T10:00:00Z", "vision", "1.000000000", 1, 0),
    ]


@pytest.mark.parametrize(
    ("query", "code"),
    [("granularity=week", "invalid_granularity"), ("granularity=day&hour_from=yesterday", None)],
)
def test_bad_values_are_problems(berlin_rows, cast, api, query, code):
    got = api(cast.fiona).get(f"/api/v1/usage/?{query}")
    assert (got.status_code, got["Content-Type"]) == (400, "application/problem+json")
    if code:
        assert got.json()["code"] == code
