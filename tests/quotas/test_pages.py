"""The queue pages: pending requests with positions and reasons, the approval inbox, quota bars,
budget burn and oversubscription, each showing only what the viewer may see."""

from __future__ import annotations

from decimal import Decimal

import pytest

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
    assert "Approval inbox" in html and "Reject" in html and "Approve</button>" not in html
    assert "approval by an admin above vision" in html
    client.force_login(cast.rita)
    assert "Approve</button>" in page(client, "/queues/")
    client.force_login(cast.dana)
    assert "Approval inbox" not in page(client, "/queues/")  # members cannot approve


def test_an_admin_approves_from_the_inbox(cast, client, busy):
    awaiting = CapacityRequest.objects.get(approval="awaiting")
    client.force_login(cast.rita)
    response = client.post(f"/queues/requests/{awaiting.pk}/approve/")
    assert response.status_code == 302
    awaiting.refresh_from_db()
    assert awaiting.approval == "approved"


def test_quota_bars_and_budget_burn_show_only_visible_tenants(cast, client, busy):
    client.force_login(cast.alice)
    html = page(client, "/queues/quotas/")
    assert "vision" in html and ">nlp<" not in html
    assert "all flavors" in html


def test_oversubscription_compares_nominal_with_physical(cast, client, busy):
    client.force_login(cast.pat)
    html = page(client, "/queues/oversubscription/")
    assert "h100" in html and ">8<" in html and ">16<" in html
