"""Valid but suspicious catalogue values are saved with a warning, never refused: the API answers the
row with ``warnings``, the form shows them first and saves only on "save anyway". Numbers by hand:
one node of 24 whole H100s is all the h100 flavor can ever offer."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import Client

from quotas.models import Budget, Queue, Quota
from tests.quotas.conftest import make_catalog

pytestmark = pytest.mark.django_db


def test_the_api_saves_a_quota_above_the_flavors_capacity_and_warns(cast, api):
    catalog = make_catalog(cast, physical=24)  # vision and nlp hold 4 each
    body = {"tenant": str(cast.research.pk), "flavor": str(catalog.flavor.pk), "resource": "nvidia.com/gpu"}

    response = api(cast.pat).post("/api/v1/quotas/", {**body, "nominal": 500}, format="json")

    assert response.status_code == 201, response.json()
    [warning] = response.json()["warnings"]
    assert warning["code"] == "quota.above_capacity" and warning["field"] == "nominal"
    assert "500 nvidia.com/gpu" in warning["message"] and "its pool counts 24" in warning["message"]
    assert Quota.objects.get(tenant=cast.research).nominal == 500


def test_a_quota_within_capacity_has_no_warning(cast, api):
    catalog = make_catalog(cast, physical=24)
    response = api(cast.pat).patch(
        f"/api/v1/quotas/{catalog.vision_quota.pk}/", {"nominal": 24}, format="json"
    )
    assert response.status_code == 200 and response.json()["warnings"] == []


def test_a_hard_budget_of_zero_and_a_queue_of_weight_zero_warn(cast, api):
    make_catalog(cast)
    client = api(cast.pat)
    budget = client.post(
        "/api/v1/budgets/",
        {"tenant": str(cast.vision.pk), "limit_ge_hours": "0", "hard": True},
        format="json",
    )
    assert budget.status_code == 201
    assert [w["code"] for w in budget.json()["warnings"]] == ["budget.hard_zero"]
    soft = client.patch(f"/api/v1/budgets/{budget.json()['id']}/", {"hard": False}, format="json")
    assert soft.json()["warnings"] == []  # a soft 0 only warns the tenant as it spends

    queue = Queue.objects.get(tenant=cast.vision)
    weighed = client.patch(f"/api/v1/queues/{queue.pk}/", {"weight": "0"}, format="json")
    assert weighed.status_code == 200
    assert [w["code"] for w in weighed.json()["warnings"]] == ["queue.zero_weight"]
    queue.refresh_from_db()
    assert queue.weight == 0


def test_the_quota_form_shows_the_warning_saves_nothing_then_saves_anyway(cast):
    make_catalog(cast, physical=24)
    admin = Client()
    admin.force_login(cast.pat)
    form = {"tenant": "research", "flavor": "h100", "nominal": "500"}

    shown = admin.post("/catalogue/quotas/new/", form)

    assert shown.status_code == 200
    page = shown.content.decode()
    assert "more than flavor h100 can ever offer: its pool counts 24" in page
    assert 'data-testid="save-anyway"' in page
    assert not Quota.objects.filter(tenant=cast.research).exists()

    saved = admin.post("/catalogue/quotas/new/", {**form, "save_anyway": "1"})
    assert saved.status_code == 302
    assert Quota.objects.get(tenant=cast.research).nominal == 500


def test_the_budget_form_no_longer_ticks_hard_and_warns_on_a_hard_zero(cast):
    make_catalog(cast)
    admin = Client()
    admin.force_login(cast.pat)
    blank = admin.get("/catalogue/budgets/new/").content.decode()
    assert 'name="hard"' in blank and 'name="hard" checked' not in blank

    shown = admin.post("/catalogue/budgets/new/", {"tenant": "vision", "limit_ge_hours": "0", "hard": "on"})
    assert "A hard budget of 0 GE-hours refuses every request" in shown.content.decode()
    assert not Budget.objects.exists()
    admin.post("/catalogue/budgets/new/", {"tenant": "vision", "limit_ge_hours": "0"})  # soft: no warning
    assert Budget.objects.get(tenant=cast.vision).limit_ge_hours == Decimal(0)
