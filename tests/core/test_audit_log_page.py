"""The audit log as people read it (issue 27): objects named, not ids; each changed field before ->
after; system bookkeeping (late usage booked every second or two in the demo) left out of /audit/ and
of the overview's "Recent changes" unless asked for."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import transaction

from gpuplatform.audit.models import AuditEvent
from gpuplatform.audit.services import record_event
from metering.services.periods import ensure_period
from metering.services.report_jobs import request_report_job
from quotas.services.requests import cancel_request, submit_request
from tests.quotas.conftest import make_catalog

pytestmark = pytest.mark.django_db


def bookkeeping(cast, times: int) -> None:
    with transaction.atomic():
        for _ in range(times):
            record_event(
                actor=None, action="usage.adjustment_booked", obj=cast.vision, after={"adjustments": 3}
            )


def test_the_log_names_the_request_and_shows_state_before_and_after(cast, client):
    make_catalog(cast)
    submit_request(actor=cast.alice, tenant="vision", flavor="h100", amount=4)
    waiting = submit_request(actor=cast.alice, tenant="vision", flavor="h100", amount=5).request
    cancel_request(actor=cast.alice, request_id=waiting.pk)
    client.force_login(cast.pat)
    html = client.get("/audit/").content.decode()
    assert "vision: 5 \u00d7 nvidia.com/gpu on h100" in html and f"request {waiting.pk}" not in html
    assert "<code>state</code>: pending \u2192 cancelled" in html
    # the created event's ids are named: the tenant by slug, the flavor by name
    assert "<code>tenant</code>: \u2014 \u2192 vision" in html
    assert "<code>flavor</code>: \u2014 \u2192 h100" in html
    assert str(waiting.tenant_id) not in html


def test_bookkeeping_is_hidden_from_the_log_and_recent_changes_unless_asked_for(cast, client):
    make_catalog(cast)
    submit_request(actor=cast.alice, tenant="vision", flavor="h100", amount=1)
    bookkeeping(cast, 30)
    client.force_login(cast.pat)
    html = client.get("/audit/").content.decode()
    assert 'data-action="usage.adjustment_booked"' not in html
    assert 'data-action="capacity_request.created"' in html and "(30 hidden)" in html
    shown = client.get("/audit/?system=1").content.decode()
    assert shown.count('data-action="usage.adjustment_booked"') == 30
    overview = client.get("/").content.decode()
    recent = overview[overview.index("Recent changes") :]
    assert "usage.adjustment_booked" not in recent and "capacity_request.created" in recent
    assert AuditEvent.objects.filter(action="usage.adjustment_booked").count() == 30  # kept, not deleted


def test_the_log_names_a_report_job_by_its_period(cast, client):
    """Recent changes showed "report 5149d17f-... done 100%" in the demo: a job is named by its
    period now."""
    period = ensure_period(at=datetime(2025, 3, 10, tzinfo=UTC))
    job = request_report_job(actor=cast.pat, period_id=period.pk)
    client.force_login(cast.pat)
    html = client.get("/audit/").content.decode()
    assert "report of 2025-03" in html and f"report {job.pk}" not in html
    assert str(period.pk) not in html
