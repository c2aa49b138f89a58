"""A tenant requests capacity through the UI and follows its request (issue 11, item 6): the same
service as the API, its messages on the form, and a page with the request's timeline."""

from __future__ import annotations

import re

import pytest

from quotas.models import CapacityRequest

pytestmark = pytest.mark.django_db


def form_key(html):
    return re.search(r'name="idempotency_key" value="([^"]+)"', html).group(1)


def test_a_tenant_admin_requests_capacity_through_the_form_and_sees_it_admitted(cast, client, catalog):
    client.force_login(cast.alice)
    html = client.get("/queues/requests/new/").content.decode()
    body = {"tenant": "vision", "flavor": "h100", "amount": 2, "priority_class": "batch", "reason": "train"}
    response = client.post("/queues/requests/new/", {**body, "idempotency_key": form_key(html)})
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    assert (
        "admitted" in page and "Timeline" in page and "new → pending" in page and "pending → admitted" in page
    )
    # a double submit of the same form is the same request
    client.post("/queues/requests/new/", {**body, "idempotency_key": form_key(html)})
    assert CapacityRequest.objects.filter(tenant=cast.vision).count() == 1


def test_the_form_shows_the_services_reason_when_it_refuses(cast, client, catalog):
    client.force_login(cast.alice)
    html = client.get("/queues/requests/new/").content.decode()
    response = client.post(
        "/queues/requests/new/",
        {
            "tenant": "vision",
            "flavor": "h100",
            "amount": 1,
            "priority_class": "prod",
            "duration_seconds": 30,
            "idempotency_key": form_key(html),
        },
    )
    assert response.status_code == 200
    assert "Ensure this value is greater than or equal to 60" in response.content.decode()
    assert not CapacityRequest.objects.exists()


def test_another_tenants_request_page_is_a_404(cast, client, catalog):
    client.force_login(cast.bob)
    html = client.get("/queues/requests/new/").content.decode()
    client.post(
        "/queues/requests/new/",
        {"tenant": "nlp", "flavor": "h100", "amount": 1, "idempotency_key": form_key(html)},
    )
    theirs = CapacityRequest.objects.get(tenant=cast.nlp)
    client.force_login(cast.alice)
    assert client.get(f"/queues/requests/{theirs.pk}/").status_code == 404


def test_an_admin_with_nothing_to_approve_sees_an_empty_inbox_not_a_missing_one(cast, client, catalog):
    client.force_login(cast.alice)
    html = client.get("/queues/").content.decode()
    assert "Approval inbox" in html and "Nothing awaits your approval" in html
