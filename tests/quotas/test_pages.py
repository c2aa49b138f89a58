"""The queue pages: pending requests with positions and reasons, the approval inbox, quota bars,
budget burn and oversubscription, each showing only what the viewer may see."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpuplatform.audit.models import AuditEvent
from quotas.models import Budget, CapacityRequest, Flavor
from quotas.services.requests import submit_request

pytestmark = pytest.mark.django_db


@pytest.fixture
def busy(cast, catalog):
    # The threshold counts what vision would then hold: 3, 6, 9 stay within 9; 6 + 4 = 10 does not.
    Flavor.objects.filter(pk=catalog.flavor.pk).update(approval_above=9)
    submit_request(actor=cast.alice, tenant="vision", flavor="h100", amount=3)
    submit_request(actor=cast.alice, tenant="vision", flavor="h100", amount=3)  # borrows 2 from nlp
    submit_request(actor=cast.dana, tenant="vision", flavor="h100", amount=3)  # waits for quota
    submit_request(actor=cast.dana, tenant="vision", flavor="h100", amount=4)  # awaits approval
    submit_request(actor=cast.bob, tenant="nlp", flavor="h100", amount=1)
    Budget.objects.create(tenant=cast.vision, limit_ge_hours=Decimal(500), hard=False)
    return catalog


def page(client, url):
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_the_queue_page_shows_pending_requests_with_reasons_and_the_inbox(cast, client, busy):
    client.force_login(cast.alice)
    html = page(client, "/queues/")
    assert "waiting_for_quota" in html and "awaiting_approval" in html
    # alice administers vision itself: she may refuse, but approval needs an admin above vision
    assert "Approval inbox" in html and "Review (you may reject)" in html and "Review and decide" not in html
    assert "approval by an admin above vision" in html
    client.force_login(cast.rita)
    assert "Review and decide" in page(client, "/queues/")
    client.force_login(cast.dana)
    assert "Approval inbox" not in page(client, "/queues/")  # members cannot approve


def test_the_inbox_links_each_request_and_says_which_threshold_it_crossed(cast, client, busy):
    awaiting = CapacityRequest.objects.get(approval="awaiting")
    client.force_login(cast.rita)
    html = page(client, "/queues/")
    assert f'href="/queues/requests/{awaiting.pk}/"' in html
    # vision held 3 + 3 (admitted) when dana asked 4 more: 10 on h100, over its threshold of 9.
    assert (
        "vision (and below) would hold 10 \u00d7 nvidia.com/gpu on h100 with this request of 4: above the "
        "flavor's approval threshold of 9." in html
    )
    assert awaiting.approval_basis == [
        {
            "flavor": "h100",
            "threshold": 9,
            "resource": "nvidia.com/gpu",
            "subtree_would_hold": 10,
            "requested": 4,
            "subtree": "vision",
        }
    ]


def test_an_admin_approves_from_the_request_page_with_a_note(cast, client, busy):
    awaiting = CapacityRequest.objects.get(approval="awaiting")
    client.force_login(cast.rita)
    # one click is not a decision: without a note nothing changes
    response = client.post(f"/queues/requests/{awaiting.pk}/approve/", HTTP_HX_REQUEST="true")
    assert "Say why" in response.content.decode()
    awaiting.refresh_from_db()
    assert awaiting.approval == "awaiting"
    response = client.post(f"/queues/requests/{awaiting.pk}/approve/", {"note": "paper deadline"})
    assert response.status_code == 302
    awaiting.refresh_from_db()
    assert awaiting.approval == "approved"
    html = page(client, f"/queues/requests/{awaiting.pk}/")
    assert "Approved by rita" in html and "paper deadline" in html
    event = AuditEvent.objects.get(action="capacity_request.approved")
    assert event.after == {"approval": "approved", "note": "paper deadline"}


def test_quota_bars_and_budget_burn_show_only_visible_tenants(cast, client, busy):
    client.force_login(cast.alice)
    html = page(client, "/queues/quotas/")
    assert "vision" in html and ">nlp<" not in html
    assert "all flavors" in html


def test_oversubscription_compares_nominal_with_physical(cast, client, busy):
    client.force_login(cast.pat)
    html = page(client, "/queues/oversubscription/")
    assert "h100" in html and ">8<" in html and ">16<" in html
