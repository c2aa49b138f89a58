"""The metering pages through the Django test client: charts and efficiency, useful empty states,
the rate card form's errors, the close action and its consequences, report jobs polled until done,
downloads for finance only, and a tenant's own costs."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest

from metering.models import BillingPeriod, JobState, RateCard, ReportJob
from metering.services.report_jobs import run_report_job
from tests.metering import rows

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")


@pytest.fixture
def march(cast):
    p = rows.pool()
    rows.capacity(p, cards=2, idle="0.5")
    rows.held(p, tenant=cast.vision, ge_hours="1")
    rows.held(p, tenant=cast.nlp, ge_hours="0.5")
    rows.used(p, tenant=cast.vision, ge_hours="0.6")
    rows.card(p, price="2.00")
    return p


def logged_in(client, user):
    client.force_login(user)
    return client


def chart(html: str, element: str) -> dict:
    found = re.search(rf'<script id="{element}" type="application/json">(.*?)</script>', html, re.S)
    assert found, element
    return json.loads(found.group(1))


def test_usage_shows_charts_per_tenant_and_pool_and_efficiency(march, cast, client):
    page = logged_in(client, cast.fiona).get("/metering/?period=2025-03").content.decode()
    tenants = chart(page, "tenant-usage")
    assert tenants["labels"] == ["03-10"]
    assert {d["label"]: d["data"] for d in tenants["datasets"]} == {"nlp": [0.5], "vision": [1.0]}
    assert chart(page, "pool-usage")["datasets"][0]["label"] == "east/h100"
    assert "<script>" not in page  # no inline script: the CSP forbids it
    assert re.search(
        r'vision</td><td class="num">1.00</td><td class="num">0.60</td><td class="num">60 %', page
    )


def test_a_tenant_sees_only_its_own_usage_and_an_empty_month_says_what_to_do(march, cast, client):
    page = logged_in(client, cast.alice).get("/metering/?period=2025-03").content.decode()
    assert [d["label"] for d in chart(page, "tenant-usage")["datasets"]] == ["vision"]
    empty = client.get("/metering/?period=2025-01").content.decode()
    assert 'data-testid="no-usage"' in empty and "backfill_usage" in empty


def test_finance_adds_a_rate_card_and_the_form_explains_refusals(march, cast, client):
    c = logged_in(client, cast.fiona)
    form = {"gpu_model": "T4", "currency": "usd", "price_per_ge_hour": "0.40", "basis": "utilisation",
            "effective_from": "2025-05-01 00:00"}  # fmt: skip
    # no cluster reports a T4: said first, nothing saved; then saved anyway
    warned = c.post("/metering/rate-cards/", form).content.decode()
    assert "No cluster reports a GPU of model T4" in warned and not RateCard.objects.filter(gpu_model="T4")
    form["save_anyway"] = "1"
    added = c.post("/metering/rate-cards/", form, follow=True)
    assert "Rate card added" in added.content.decode()
    assert RateCard.objects.get(gpu_model="T4").currency == "USD"
    again = c.post("/metering/rate-cards/", form)
    assert again.status_code == 400 and "overlaps the rate card" in again.content.decode()
    odd = c.post("/metering/rate-cards/", {**form, "gpu_model": "A100", "effective_from": "2025-05-01 00:30"})
    assert odd.status_code == 400 and "whole hour" in odd.content.decode()
    assert RateCard.objects.count() == 2


def test_a_tenant_reads_prices_but_cannot_add_one(march, cast, client):
    c = logged_in(client, cast.alice)
    assert 'data-testid="rate-card-form"' not in c.get("/metering/rate-cards/").content.decode()
    assert c.post("/metering/rate-cards/", {"gpu_model": "T4"}).status_code == 404
    assert RateCard.objects.count() == 1


def test_finance_closes_with_the_consequences_spelled_out_and_exports(march, cast, client):
    c = logged_in(client, cast.fiona)
    period = BillingPeriod.objects.get(label="2025-03")
    page = c.get(f"/metering/periods/{period.pk}/").content.decode()
    assert "the database refuses it" in page and "adjustment lines in the next open period" in page
    from_open = c.post(
        f"/metering/periods/{period.pk}/close/", {"idle": "central", "confirm": "on"}, follow=True
    )
    assert "start closing it (the grace period) first" in from_open.content.decode()
    c.post(f"/metering/periods/{period.pk}/start-closing/")
    unconfirmed = c.post(f"/metering/periods/{period.pk}/close/", {"idle": "central"}, follow=True)
    assert "Tick the confirmation" in unconfirmed.content.decode()
    closed = c.post(
        f"/metering/periods/{period.pk}/close/", {"idle": "central", "confirm": "on"}, follow=True
    )
    assert "is closed" in closed.content.decode()
    period.refresh_from_db()
    assert period.state == "closed"
    twice = c.post(f"/metering/periods/{period.pk}/close/", {"idle": "central", "confirm": "on"}, follow=True)
    assert "already closed" in twice.content.decode()
    c.post(f"/metering/periods/{period.pk}/reports/", {})
    job = ReportJob.objects.get()
    polling = c.get(f"/metering/jobs/{job.pk}/").content.decode()
    assert 'hx-trigger="every 2s"' in polling
    run_report_job(job_id=job.pk)
    done = c.get(f"/metering/jobs/{job.pk}/").content.decode()
    assert "hx-trigger" not in done and f"/metering/jobs/{job.pk}/focus/" in done
    got = c.get(f"/metering/jobs/{job.pk}/focus/")
    assert b"".join(got.streaming_content).startswith(b"BilledCost,BillingAccountId,")
    assert ReportJob.objects.get().state == JobState.DONE


def test_a_tenant_sees_its_costs_but_no_period_page_or_download(march, cast, client):
    fiona = logged_in(client, cast.fiona)
    period = BillingPeriod.objects.get(label="2025-03")
    fiona.post(f"/metering/periods/{period.pk}/start-closing/")
    fiona.post(f"/metering/periods/{period.pk}/close/", {"idle": "central", "confirm": "on"})
    fiona.post(f"/metering/periods/{period.pk}/reports/", {})
    job = run_report_job(job_id=ReportJob.objects.get().pk)
    c = logged_in(client, cast.alice)
    costs = c.get("/metering/periods/").content.decode()
    row = r'2025-03</strong></td><td>vision</td><td class="num">1.00</td><td class="num"><strong>2.00 USD'
    assert re.search(row, costs)
    assert "/api/v1/reports/export/?period=2025-03&amp;as=focus" in costs
    assert c.get(f"/metering/periods/{period.pk}/").status_code == 404
    assert c.get(f"/metering/jobs/{job.pk}/").status_code == 404
    assert c.get(f"/metering/jobs/{job.pk}/csv/").status_code == 404
    assert c.post(f"/metering/periods/{period.pk}/close/", {"confirm": "on"}).status_code == 404


def test_periods_list_filters_and_pages(march, cast, client):
    for month in range(1, 13):
        BillingPeriod.objects.get_or_create(
            label=f"2024-{month:02d}",
            defaults={
                "starts_at": datetime(2024, month, 1, tzinfo=UTC),
                "ends_at": datetime(2024, month, 2, tzinfo=UTC),
                "timezone": "UTC",
            },
        )
    c = logged_in(client, cast.fiona)
    page = c.get("/metering/periods/?state=open").content.decode()
    assert page.count("/metering/periods/") >= 13
    assert "No billing period in that state" in c.get("/metering/periods/?state=closed").content.decode()


def test_a_period_whose_report_is_being_built_says_so_not_no_report_yet(march, cast, client):
    c = logged_in(client, cast.fiona)
    period = BillingPeriod.objects.get(label="2025-03")
    assert "No report yet" in c.get(f"/metering/periods/{period.pk}/").content.decode()
    ReportJob.objects.create(period=period, state=JobState.RUNNING, progress=40)
    page = c.get(f"/metering/periods/{period.pk}/").content.decode()
    assert "No report yet" not in page
    assert "A report is being built (40 %" in page
