"""Capacity requests over the API: admitted at once, borrowing, waiting with reasons, idempotency."""

from __future__ import annotations

import pytest

from quotas.models import CapacityRequest

pytestmark = pytest.mark.django_db

URL = "/api/v1/capacity-requests/"


def post(client, body, key=None):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    return client.post(URL, body, format="json", **headers)


def test_a_request_within_nominal_is_admitted_at_once(cast, api, catalog):
    response = post(
        api(cast.alice), {"tenant": "vision", "flavor": "h100", "amount": 2, "priority_class": "batch"}
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["state"] == "admitted" and body["reason_code"] == "admit"
    assert [t["to_state"] for t in body["transitions"]] == ["pending", "admitted"]


def test_the_answer_to_a_submission_is_what_the_request_reads_back_as(cast, api, catalog):
    # The 201 is rendered from memory, a later GET from the stored rows: they must agree, for an
    # admitted request (2 of vision's 4) and a waiting one (7 more: 6 at most are left with nlp's 4).
    client = api(cast.alice)
    admitted = post(client, {"tenant": "vision", "flavor": "h100", "amount": 2, "duration_seconds": 3600})
    waiting = post(client, {"tenant": "vision", "flavor": "h100", "amount": 7})
    assert (admitted.json()["state"], waiting.json()["state"]) == ("admitted", "pending")
    for answer in (admitted, waiting):
        assert answer.status_code == 201
        assert answer.json() == client.get(f"{URL}{answer.json()['id']}/").json()
    assert [(t["to_state"], t["actor"]) for t in waiting.json()["transitions"]] == [("pending", "alice")]


def test_over_nominal_borrows_from_an_idle_sibling(cast, api, catalog):
    body = post(api(cast.alice), {"tenant": "vision", "flavor": "h100", "amount": 6}).json()
    assert body["state"] == "admitted" and body["reason_code"] == "borrow"
    assert body["borrowed"] == [{"lender": "nlp", "resource": "nvidia.com/gpu", "amount": 2, "ge": "2"}]


def test_a_request_that_does_not_fit_waits_and_says_why_and_where(cast, api, catalog):
    client = api(cast.alice)
    post(client, {"tenant": "vision", "flavor": "h100", "amount": 8})
    body = post(client, {"tenant": "vision", "flavor": "h100", "amount": 1}).json()
    assert body["state"] == "pending"
    assert body["reason_code"] == "waiting_for_quota"
    assert body["queue_position"] == 1 and body["cohort_position"] == 1


def test_the_same_idempotency_key_and_body_return_the_same_request(cast, api, catalog):
    client = api(cast.alice)
    body = {"tenant": "vision", "flavor": "h100", "amount": 1}
    first = post(client, body, key="key-00000001")
    second = post(client, body, key="key-00000001")
    assert (first.status_code, second.status_code) == (201, 200)
    assert first.json()["id"] == second.json()["id"]
    assert CapacityRequest.objects.count() == 1
