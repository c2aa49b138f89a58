"""Refused requests: a problem+json with a stable code, and nothing changed in the database."""

from __future__ import annotations

import pytest

from quotas.models import CapacityRequest, Flavor, PriorityClass, Queue
from tenants.services import create_tenant
from tests.helpers import assert_problem, database_state

pytestmark = pytest.mark.django_db

URL = "/api/v1/capacity-requests/"
TABLES = ("quotas.CapacityRequest", "quotas.RequestTransition", "audit.AuditEvent")


def refused(client, body, status, code, key=None):
    before = database_state(*TABLES)
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    problem = assert_problem(client.post(URL, body, format="json", **headers), status, code)
    assert database_state(*TABLES) == before
    return problem


@pytest.mark.parametrize("amount", [-1, 0, "two", 1.5, None])
def test_it_refuses_amounts_that_are_not_positive_integers(cast, api, catalog, amount):
    refused(
        api(cast.alice), {"tenant": "vision", "flavor": "h100", "amount": amount}, 400, "validation_failed"
    )


def test_it_refuses_an_amount_no_quota_could_ever_hold(cast, api, catalog):
    # vision 4 + nlp 4 is the whole research pool: 9 can never fit, even with nlp idle.
    refused(api(cast.alice), {"tenant": "vision", "flavor": "h100", "amount": 9}, 400, "exceeds_max_possible")


def test_it_refuses_an_unknown_flavor_queue_or_class(cast, api, catalog):
    client = api(cast.alice)
    refused(client, {"tenant": "vision", "flavor": "nope", "amount": 1}, 404, "flavor_not_found")
    refused(
        client, {"tenant": "vision", "queue": "nope", "flavor": "h100", "amount": 1}, 404, "queue_not_found"
    )
    refused(
        client,
        {"tenant": "vision", "flavor": "h100", "priority_class": "nope", "amount": 1},
        404,
        "priority_class_not_found",
    )


def test_foreign_objects_read_as_absent(cast, api, catalog):
    Flavor.objects.create(
        name="nlp-only", tenant=cast.nlp, resources=[{"name": "nvidia.com/gpu", "ge_per_unit": "1"}]
    )
    PriorityClass.objects.create(name="nlp-urgent", value=5000, tenant=cast.nlp)
    client = api(cast.alice)
    refused(client, {"tenant": "nlp", "flavor": "h100", "amount": 1}, 404, "tenant_not_found")
    refused(
        client, {"queue": str(catalog.nlp_queue.pk), "flavor": "h100", "amount": 1}, 404, "queue_not_found"
    )
    refused(client, {"tenant": "vision", "flavor": "nlp-only", "amount": 1}, 404, "flavor_not_found")
    refused(
        client,
        {"tenant": "vision", "flavor": "h100", "priority_class": "nlp-urgent", "amount": 1},
        404,
        "priority_class_not_found",
    )


def test_it_refuses_a_priority_class_the_tenant_may_not_use(cast, api, catalog):
    PriorityClass.objects.create(name="nlp-urgent", value=5000, tenant=cast.nlp)
    # rita sees both teams, so the class is visible to her, but vision may not use it.
    body = {"tenant": "vision", "flavor": "h100", "priority_class": "nlp-urgent", "amount": 1}
    refused(api(cast.rita), body, 400, "priority_class_not_allowed")


@pytest.mark.parametrize("key", ["short", "has space in it", "x" * 129, "semi;colon!"])
def test_it_refuses_a_malformed_idempotency_key(cast, api, catalog, key):
    refused(
        api(cast.alice),
        {"tenant": "vision", "flavor": "h100", "amount": 1},
        400,
        "idempotency_key_malformed",
        key=key,
    )


def test_the_same_key_with_another_body_is_a_conflict(cast, api, catalog):
    client = api(cast.alice)
    client.post(
        URL,
        {"tenant": "vision", "flavor": "h100", "amount": 1},
        format="json",
        HTTP_IDEMPOTENCY_KEY="key-00000002",
    )
    refused(
        client,
        {"tenant": "vision", "flavor": "h100", "amount": 2},
        409,
        "idempotency_key_reused",
        key="key-00000002",
    )


def test_unknown_fields_and_viewers_are_refused(cast, api, catalog):
    refused(
        api(cast.alice), {"tenant": "vision", "flavor": "h100", "amount": 1, "amout": 1}, 400, "unknown_field"
    )
    refused(api(cast.victor), {"tenant": "vision", "flavor": "h100", "amount": 1}, 403, "permission_denied")


def test_cancelling_someone_elses_request_is_not_found(cast, api, catalog):
    theirs = api(cast.bob).post(URL, {"tenant": "nlp", "flavor": "h100", "amount": 1}, format="json").json()
    before = database_state(*TABLES)
    for verb in ("cancel", "release", "approve", "reject"):
        assert_problem(
            api(cast.alice).post(f"{URL}{theirs['id']}/{verb}/", {}, format="json"), 404, "not_found"
        )
    assert database_state(*TABLES) == before


def test_a_queue_of_another_tenant_by_name_is_not_found(cast, api, catalog):
    Queue.objects.create(tenant=cast.nlp, name="nlp-only")
    refused(
        api(cast.alice),
        {"tenant": "vision", "queue": "nlp-only", "flavor": "h100", "amount": 1},
        404,
        "queue_not_found",
    )
    assert CapacityRequest.objects.count() == 0


def test_a_tenant_with_quotas_or_requests_cannot_be_deleted(cast, api, catalog):
    lab = create_tenant(actor=cast.pat, slug="lab", display_name="Lab", parent_id=cast.research.pk)
    Queue.objects.create(tenant=lab, name="default")  # no members, no children: only the queue holds it
    before = database_state("tenants.Tenant", *TABLES)
    assert_problem(api(cast.rita).delete(f"/api/v1/tenants/{lab.pk}/"), 409, "tenant_not_empty")
    assert database_state("tenants.Tenant", *TABLES) == before
