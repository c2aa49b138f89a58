"""Findings 2 and 4, and the new user's defect 1: a tenant-admin escaping its quota, budget and approval
through a child it creates, approving its own requests, and setting what is decided above it.

The cast: alice administers vision (under research, administered by rita); dana is a member of vision.
The catalogue: 16 physical H100s, vision's nominal 4, nlp's nominal 4.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from quotas.models import Budget, CapacityRequest, Flavor, Queue, Quota
from tests.helpers import assert_problem, database_state
from tests.quotas.conftest import GPU, make_catalog

pytestmark = pytest.mark.django_db

URL = "/api/v1/capacity-requests/"


@pytest.fixture
def catalog(cast):
    return make_catalog(cast)


@pytest.fixture
def vision_x(cast, api):
    response = api(cast.alice).post(
        "/api/v1/tenants/",
        {"slug": "vision-x", "display_name": "X", "parent_id": str(cast.vision.pk)},
        format="json",
    )
    assert response.status_code == 201, response.json()
    Queue.objects.create(tenant_id=response.json()["id"], name="default")
    return response.json()["id"]


def ask(client, tenant, amount, **extra):
    return client.post(URL, {"tenant": tenant, "flavor": "h100", "amount": amount, **extra}, format="json")


def post_quota(api, actor, catalog, tenant_id, nominal):
    body = {"tenant": str(tenant_id), "flavor": str(catalog.flavor.pk), "resource": GPU, "nominal": nominal}
    return api(actor).post("/api/v1/quotas/", body, format="json")


def test_a_child_quota_above_what_the_parent_holds_is_refused(cast, api, catalog, vision_x):
    before = database_state("quotas.Quota")

    response = post_quota(api, cast.alice, catalog, vision_x, 1000)

    assert_problem(response, 400, "exceeds_parent_quota")
    assert database_state("quotas.Quota") == before


def test_a_child_quota_comes_out_of_the_parent_so_the_subtree_total_stays_what_was_granted(
    cast, api, catalog, vision_x
):
    # given vision holds 4 H100s of nominal quota, granted from above
    # when alice gives 3 of them to vision-x
    response = post_quota(api, cast.alice, catalog, vision_x, 3)

    # then vision keeps 1, vision-x holds 3: still 4 in vision's subtree
    assert response.status_code == 201, response.json()
    assert Quota.objects.get(tenant=cast.vision).nominal == 1
    assert Quota.objects.get(tenant_id=vision_x).nominal == 3
    # and giving it back returns it to vision
    assert api(cast.alice).delete(f"/api/v1/quotas/{response.json()['id']}/").status_code == 204
    assert Quota.objects.get(tenant=cast.vision).nominal == 4


def test_requests_spread_over_a_child_cannot_hold_more_than_the_parent_was_given(
    cast, api, catalog, vision_x
):
    # nlp's 4 may be borrowed, as before; the attack was 3 x 4 admitted on a 1,000 GPU child quota
    Quota.objects.filter(tenant=cast.nlp).update(lending_limit=0)
    post_quota(api, cast.alice, catalog, vision_x, 4)

    states = [ask(api(cast.alice), "vision-x", 4).json()["state"] for _ in range(3)]

    assert states == ["admitted", "pending", "pending"]
    held = sum(r.amounts[GPU] for r in CapacityRequest.objects.filter(state__in=["admitted", "active"]))
    assert held == 4


def test_a_parents_hard_budget_covers_the_child_one_created(cast, api, catalog, vision_x):
    # given vision on a hard budget of 1 GE-hour this month
    Budget.objects.create(tenant=cast.vision, limit_ge_hours=Decimal(1), hard=True)
    post_quota(api, cast.alice, catalog, vision_x, 4)

    # when the same 4-GPU, 1-hour request is made for vision and for its child
    for_vision = ask(api(cast.alice), "vision", 4, duration_seconds=3600).json()
    for_child = ask(api(cast.alice), "vision-x", 4, duration_seconds=3600).json()

    # then both wait over budget: 4 GE x 1 h = 4 GE-h > 1 GE-h, whichever tenant of the subtree asks
    assert (for_vision["state"], for_vision["reason_code"]) == ("pending", "over_budget")
    assert (for_child["state"], for_child["reason_code"]) == ("pending", "over_budget")
    assert "'vision'" in for_child["message"]


def test_an_approval_threshold_counts_what_the_subtree_would_then_hold(cast, api, catalog, vision_x):
    Flavor.objects.filter(pk=catalog.flavor.pk).update(approval_above=4)
    post_quota(api, cast.alice, catalog, vision_x, 2)

    first = ask(api(cast.alice), "vision", 2).json()
    second = ask(api(cast.alice), "vision-x", 2).json()
    third = ask(api(cast.alice), "vision-x", 1).json()

    # 2, then 2 + 2 = 4 within the threshold; then 4 + 1 = 5 > 4 across vision's subtree
    assert (first["state"], second["state"]) == ("admitted", "admitted")
    assert (third["state"], third["reason_code"]) == ("pending", "awaiting_approval")


def test_a_tenant_admin_cannot_approve_a_request_of_its_own_tenant(cast, api, catalog):
    Flavor.objects.filter(pk=catalog.flavor.pk).update(approval_above=4)
    by_dana = ask(api(cast.dana), "vision", 5).json()
    by_alice = ask(api(cast.alice), "vision", 5).json()

    assert by_dana["reason_code"] == "awaiting_approval"
    assert_problem(
        api(cast.alice).post(f"{URL}{by_dana['id']}/approve/", {}, format="json"), 403, "approver_not_above"
    )
    assert_problem(
        api(cast.alice).post(f"{URL}{by_alice['id']}/approve/", {}, format="json"), 403, "own_request"
    )
    assert_problem(
        api(cast.dana).post(f"{URL}{by_dana['id']}/approve/", {}, format="json"), 403, "permission_denied"
    )
    # rita administers research, above vision: she may
    approved = api(cast.rita).post(f"{URL}{by_dana['id']}/approve/", {}, format="json")
    assert approved.status_code == 200 and approved.json()["approval"] == "approved"


def test_a_platform_admin_cannot_approve_its_own_request_either(cast, api, catalog):
    Flavor.objects.filter(pk=catalog.flavor.pk).update(approval_above=4)
    own = ask(api(cast.pat), "vision", 5).json()

    assert_problem(api(cast.pat).post(f"{URL}{own['id']}/approve/", {}, format="json"), 403, "own_request")


@pytest.mark.parametrize(
    ("field", "value"),
    [("cost_centre", "CC-OTHER-DEPARTMENT"), ("state", "suspended")],
)
def test_a_tenant_admin_cannot_set_its_own_tenants_cost_centre_or_state(cast, api, field, value):
    before = database_state("tenants.Tenant")

    response = api(cast.alice).patch(f"/api/v1/tenants/{cast.vision.pk}/", {field: value}, format="json")

    assert_problem(response, 403, "set_from_above")
    assert database_state("tenants.Tenant") == before


def test_a_tenant_admin_cannot_lift_a_suspension_set_above_it(cast, api):
    assert (
        api(cast.rita)
        .patch(f"/api/v1/tenants/{cast.vision.pk}/", {"state": "suspended"}, format="json")
        .status_code
        == 200
    )

    response = api(cast.alice).patch(f"/api/v1/tenants/{cast.vision.pk}/", {"state": "active"}, format="json")

    assert_problem(response, 403, "set_from_above")


def test_a_tenant_admin_cannot_raise_its_own_queue_weight(cast, api, catalog):
    queue = catalog.vision_queue

    response = api(cast.alice).patch(f"/api/v1/queues/{queue.pk}/", {"weight": "99999.999"}, format="json")

    assert_problem(response, 403, "set_from_above")
    queue.refresh_from_db()
    assert queue.weight == 1
    assert (
        api(cast.rita).patch(f"/api/v1/queues/{queue.pk}/", {"weight": "2"}, format="json").status_code == 200
    )


def test_a_suspended_tenant_cannot_request_and_its_pending_requests_stop_waiting(cast, api, catalog):
    Quota.objects.filter(tenant=cast.nlp).update(lending_limit=0)
    admitted = ask(api(cast.alice), "vision", 4).json()
    waiting = ask(api(cast.alice), "vision", 2).json()
    assert (admitted["state"], waiting["state"]) == ("admitted", "pending")

    # rita (above vision) suspends vision: what it waited for stops waiting at once, saying why
    assert (
        api(cast.rita)
        .patch(f"/api/v1/tenants/{cast.vision.pk}/", {"state": "suspended"}, format="json")
        .status_code
        == 200
    )

    stopped = api(cast.alice).get(f"{URL}{waiting['id']}/").json()
    assert (stopped["state"], stopped["reason_code"]) == ("cancelled", "tenant_suspended")
    assert_problem(ask(api(cast.alice), "vision", 1), 409, "tenant_suspended")
    # a suspension of research covers vision below it too
    api(cast.pat).patch(f"/api/v1/tenants/{cast.vision.pk}/", {"state": "active"}, format="json")
    api(cast.pat).patch(f"/api/v1/tenants/{cast.research.pk}/", {"state": "suspended"}, format="json")
    assert_problem(ask(api(cast.alice), "vision", 1), 409, "tenant_suspended")
