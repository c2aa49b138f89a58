"""Every API list costs the same number of queries whatever the page size (no N+1)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from gpuplatform.accounts.tokens import issue_api_token
from quotas.models import PriorityClass
from tenants.services import add_membership, create_tenant
from tests.fixtures.people import make_user
from tests.isolation.routes import api_routes
from tests.quotas import factories as adm

pytestmark = pytest.mark.django_db


@pytest.fixture
def crowd(cast):
    """Enough rows that a page of 2 and a page of 25 differ on every list."""
    for n in range(25):
        team = create_tenant(
            actor=cast.pat,
            slug=f"team-{n}",
            display_name=f"Team {n}",
            parent_id=cast.research.pk,
            namespaces=[("", f"ns-{n}")],
        )
        person = make_user(f"person-{n}")
        add_membership(actor=cast.pat, tenant_id=team.pk, username=person.username, role="member")
        issue_api_token(actor=cast.pat, name=f"token-{n}", scopes=["read"])
        # Admission rows on every list: a quota, budget, queue and request per team, flavors, classes.
        adm.capacity_request(tenant=team)
        adm.quota(tenant=team)
        adm.budget(tenant=team)
        adm.flavor(name=f"flavor-{n}")
        PriorityClass.objects.create(name=f"class-{n}", value=n)
    return cast


def queries_for(client, url: str) -> tuple[int, int]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return len(captured), len(response.json()["results"])


@pytest.mark.parametrize("viewer", ["pat", "rita"])
def test_list_query_count_is_constant_in_page_size(crowd, api, viewer):
    client = api(getattr(crowd, viewer))
    client.get("/api/v1/me/")  # the token's first use records last_used_at: one write, not per page
    for route in api_routes():
        if route.is_detail or "GET" not in route.methods or route.basename == "me":
            continue
        small, small_rows = queries_for(client, route.url() + "?page_size=2")
        large, large_rows = queries_for(client, route.url() + "?page_size=25")
        if large_rows <= small_rows:
            continue  # this viewer sees too few rows on this route to tell
        assert small == large, f"{route.template}: {small} queries for 2 rows, {large} for {large_rows}"
