"""The tenant page shows its quotas, requests and holdings (issue 11, item 8), each with links, through
the scoping door: another tenant's page is a 404 and nothing of another tenant shows on one's own."""

from __future__ import annotations

import re

import pytest

from quotas.services.requests import submit_request
from tests.inventory import factories as inv
from tests.quotas.conftest import make_catalog

pytestmark = pytest.mark.django_db


@pytest.fixture
def catalog(cast):
    return make_catalog(cast)


def section(html: str, testid: str) -> str:
    return re.search(rf'data-testid="{testid}">(.*?)</section>', html, re.S).group(1)


def test_a_tenant_page_shows_its_quotas_requests_and_holdings(cast, client, catalog):
    # given: vision (quota 4 h100) asks for 3 and is admitted; it holds a pod on a node
    submitted = submit_request(actor=cast.alice, tenant="vision", flavor="h100", amount=3)
    inv.allocation(tenant=cast.vision, namespace="team-vision", name="trainer")
    inv.allocation(tenant=cast.nlp, namespace="team-nlp", name="theirs")
    client.force_login(cast.rita)

    html = client.get(f"/tenants/{cast.vision.pk}/").content.decode()

    # then: the quota row stands at used 3, available 4 - 3 = 1; rita (above vision) may edit it
    quotas = section(html, "tenant-quotas")
    row = re.search(r"<tbody>(.*?)</tbody>", quotas, re.S).group(1)
    numbers = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    assert numbers[:7] == ["h100", "nvidia.com/gpu", "4", "3", "0", "0", "1"]
    assert f"/catalogue/quotas/{catalog.vision_quota.pk}/edit/" in quotas
    requests = section(html, "tenant-requests")
    assert f"/queues/requests/{submitted.request.pk}/" in requests and "admitted" in requests
    holdings = section(html, "tenant-holdings")
    assert "team-vision/trainer" in holdings and "theirs" not in holdings
    assert "/inventory/allocations/?tenant=vision" in holdings


def test_a_member_sees_its_tenant_without_edit_links_and_another_tenants_page_is_a_404(cast, client, catalog):
    client.force_login(cast.dana)
    html = client.get(f"/tenants/{cast.vision.pk}/").content.decode()
    assert "No capacity requests yet." in html and "Holds nothing in the cluster now." in html
    assert "/catalogue/quotas/" not in section(html, "tenant-quotas").split("</table>")[0]
    assert client.get(f"/tenants/{cast.nlp.pk}/").status_code == 404
