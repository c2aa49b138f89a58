"""Quota rows that say where they stand (issue 11, item 7): used, borrowed, lent and available per
quota in the API and on the quota page, and filters that take the names a POST takes."""

from __future__ import annotations

import pytest

from quotas.services.requests import submit_request

pytestmark = pytest.mark.django_db


@pytest.fixture
def vision_borrows_from_nlp(cast, catalog):
    # vision 4 and nlp 4 under research: vision holds 6 (2 borrowed from nlp), nlp holds 1
    submit_request(actor=cast.alice, tenant="vision", flavor="h100", amount=4)
    submit_request(actor=cast.alice, tenant="vision", flavor="h100", amount=2)
    submit_request(actor=cast.bob, tenant="nlp", flavor="h100", amount=1)
    return catalog


def standing(client, query=""):
    rows = client.get(f"/api/v1/quotas/{query}").json()["results"]
    return {row["tenant"]: row["standing"] for row in rows}


def test_each_quota_says_what_is_used_borrowed_lent_and_available(cast, api, vision_borrows_from_nlp):
    seen = standing(api(cast.rita))
    assert seen[str(cast.vision.pk)] == {"used": 6, "borrowed": 2, "lent": 0, "available": 0}
    assert seen[str(cast.nlp.pk)] == {"used": 1, "borrowed": 0, "lent": 2, "available": 1}
    one = api(cast.rita).get(f"/api/v1/quotas/{vision_borrows_from_nlp.nlp_quota.pk}/").json()
    assert one["standing"]["lent"] == 2


def test_quota_filters_take_the_names_a_post_takes(cast, api, vision_borrows_from_nlp):
    rita = api(cast.rita)
    assert set(standing(rita, "?tenant=vision")) == {str(cast.vision.pk)}
    assert set(standing(rita, f"?tenant={cast.nlp.pk}")) == {str(cast.nlp.pk)}
    assert len(standing(rita, "?flavor=h100")) == 2
    assert standing(rita, "?flavor=t4-shared") == {}
    requests = rita.get("/api/v1/capacity-requests/?tenant=nlp&flavor=h100").json()["results"]
    assert [r["tenant_slug"] for r in requests] == ["nlp"]


def test_the_quota_page_shows_lent_and_available(cast, client, vision_borrows_from_nlp):
    client.force_login(cast.rita)
    html = client.get("/queues/quotas/").content.decode()
    assert '<th class="num">Lent, units</th><th class="num">Available, units</th>' in html
    assert "1 used of 4 nominal: 0 borrowed, 2 lent, 1 available" in html
