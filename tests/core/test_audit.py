"""Audit events are written in the change's transaction: both commit or neither."""

from __future__ import annotations

import pytest
from django.db import transaction

from gpuplatform.audit.models import AuditEvent
from tenants.models import Tenant
from tenants.services import create_tenant, update_tenant
from tests.helpers import assert_problem

pytestmark = pytest.mark.django_db


def test_a_rolled_back_change_leaves_no_event(cast):
    events = AuditEvent.objects.count()

    def change_then_fail() -> None:
        with transaction.atomic():
            create_tenant(actor=cast.pat, slug="ghost", display_name="Ghost")
            raise RuntimeError("the caller's transaction fails after the service returned")

    with pytest.raises(RuntimeError):
        change_then_fail()
    assert not Tenant.objects.filter(slug="ghost").exists()
    assert AuditEvent.objects.count() == events


def test_an_update_records_before_and_after(cast):
    update_tenant(
        actor=cast.rita, tenant_id=cast.vision.pk, display_name="Computer Vision", cost_centre="CC-7"
    )
    event = AuditEvent.objects.filter(action="tenant.updated").get()
    assert event.before is not None and event.after is not None
    assert event.actor_label == "rita"
    assert event.before["display_name"] == "Vision"
    assert event.after["display_name"] == "Computer Vision"
    assert event.changed_fields == ["cost_centre", "display_name"]
    assert event.tenant_id == cast.vision.pk


def test_an_update_that_changes_nothing_records_nothing(cast):
    events = AuditEvent.objects.count()
    update_tenant(actor=cast.rita, tenant_id=cast.vision.pk, display_name="Vision")
    assert AuditEvent.objects.count() == events


def test_only_platform_admins_read_the_log(cast, api):
    assert api(cast.pat).get("/api/v1/audit-events/").json()["results"]
    assert api(cast.rita).get("/api/v1/audit-events/").json()["results"] == []
    event = AuditEvent.objects.first()
    assert event is not None
    assert_problem(api(cast.fiona).get(f"/api/v1/audit-events/{event.pk}/"), 404, "not_found")


def test_the_log_filters_and_pages(cast, api):
    client = api(cast.pat)
    page = client.get("/api/v1/audit-events/", {"action_prefix": "tenant.", "page_size": 2}).json()
    assert len(page["results"]) == 2
    assert all(row["action"] == "tenant.created" for row in page["results"])
    second = client.get(page["next"]).json()
    assert {r["id"] for r in second["results"]}.isdisjoint({r["id"] for r in page["results"]})
