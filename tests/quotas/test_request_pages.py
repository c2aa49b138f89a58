"""A tenant requests capacity through the UI and follows its request (issue 11, item 6): the same
service as the API, its messages on the form, and a page with the request's timeline."""

from __future__ import annotations

import re

import pytest

from gpuplatform.audit.models import AuditEvent
from quotas.models import CapacityRequest
from quotas.services.requests import submit_request

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
            "duration": 400,
            "duration_unit": "days",
            "idempotency_key": form_key(html),
        },
    )
    assert response.status_code == 200
    assert "At most 366 days." in response.content.decode()
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


def test_the_form_speaks_hours_and_days(cast, client, catalog):
    client.force_login(cast.alice)
    html = client.get("/queues/requests/new/").content.decode()
    assert "Duration (seconds)" not in html and "For how long" in html
    body = {"tenant": "vision", "flavor": "h100", "amount": 1, "duration": 2, "duration_unit": "days"}
    client.post("/queues/requests/new/", {**body, "idempotency_key": form_key(html)})
    made = CapacityRequest.objects.get(tenant=cast.vision)
    assert made.duration_seconds == 2 * 86400
    assert "2 days" in client.get(f"/queues/requests/{made.pk}/").content.decode()


def test_the_form_shows_quota_free_capacity_and_the_wait_per_flavor(cast, client, catalog):
    # 16 H100 in the pool; vision's quota 4, nlp's 4. nlp holds 4 for 3 hours, vision 3 until released.
    submit_request(actor=cast.bob, tenant="nlp", flavor="h100", amount=4, duration_seconds=3 * 3600)
    submit_request(actor=cast.alice, tenant="vision", flavor="h100", amount=3)
    client.force_login(cast.alice)
    html = client.get("/queues/requests/new/?tenant=vision&amount=1").content.decode()
    row = re.search(r'<tr data-flavor="h100">(.*?)</tr>', html, re.S).group(1)
    # vision: 4 - 3 = 1 available; the pool: 16 - 4 - 3 = 9 free; one unit fits at once.
    assert "1 of 4" in row and "9 of 16" in row and ">now<" in row
    assert "Room now for 1 on <strong>h100</strong>" in html
    assert "h100: room now (9 free)" in html  # the flavor choice says so too
    # two units exceed vision's available quota: the estimate walks the releases (nlp's 4, in 3 h)
    html = client.get("/queues/requests/new/?tenant=vision&amount=2").content.decode()
    row = re.search(r'<tr data-flavor="h100">(.*?)</tr>', html, re.S).group(1)
    ends = CapacityRequest.objects.get(tenant=cast.nlp).expires_at
    assert "until about" in row and ends.strftime("%Y-%m-%d %H:%M") in row
    assert "No flavor has room for 2 at once" in html


def test_alice_cancels_her_pending_request_in_place(cast, client, catalog):
    submit_request(actor=cast.alice, tenant="vision", flavor="h100", amount=4)
    waiting = submit_request(actor=cast.alice, tenant="vision", flavor="h100", amount=5).request
    assert waiting.state == "pending"
    client.force_login(cast.alice)
    html = client.get(f"/queues/requests/{waiting.pk}/").content.decode()
    assert "Cancel this request" in html and "gives up its place (#1)" in html
    response = client.post(f"/queues/requests/{waiting.pk}/cancel/", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200 and 'data-state="cancelled"' in html and "Cancelled." in html
    assert "Cancel this request" not in html  # nothing left to cancel
    waiting.refresh_from_db()
    assert waiting.state == "cancelled"
    assert AuditEvent.objects.filter(action="capacity_request.cancelled", object_id=str(waiting.pk)).exists()


def test_alice_releases_an_admitted_request_and_the_next_is_admitted(cast, client, catalog):
    held = submit_request(actor=cast.alice, tenant="vision", flavor="h100", amount=4).request
    # 5 more would need 4 + 5 = 9 of vision's 4 and nlp's idle 4: it waits
    nxt = submit_request(actor=cast.dana, tenant="vision", flavor="h100", amount=5).request
    assert (held.state, nxt.state) == ("admitted", "pending")
    client.force_login(cast.alice)
    html = client.get(f"/queues/requests/{held.pk}/").content.decode()
    assert "Release this capacity" in html and "gives back 4 \u00d7 nvidia.com/gpu on h100 now" in html
    response = client.post(f"/queues/requests/{held.pk}/release/")
    assert response.status_code == 302
    held.refresh_from_db()
    assert held.state == "released"
    assert "Released: the capacity is back" in client.get(response["Location"]).content.decode()
    nxt.refresh_from_db()
    assert nxt.state == "admitted"  # 4 of its own and 1 borrowed from nlp, in the same transaction


def test_a_member_cannot_cancel_anothers_request_and_sees_why(cast, client, catalog):
    submit_request(actor=cast.alice, tenant="vision", flavor="h100", amount=4)
    waiting = submit_request(actor=cast.alice, tenant="vision", flavor="h100", amount=5).request
    client.force_login(cast.dana)
    assert "Cancel this request" not in client.get(f"/queues/requests/{waiting.pk}/").content.decode()
    response = client.post(f"/queues/requests/{waiting.pk}/cancel/", HTTP_HX_REQUEST="true")
    assert "Only the requester or a tenant-admin may do this." in response.content.decode()
    waiting.refresh_from_db()
    assert waiting.state == "pending"
