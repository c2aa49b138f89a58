"""List pages page through their rows with the shared pager instead of growing without end."""

from __future__ import annotations

import pytest

from tenants.services import create_tenant
from tests.inventory import factories as inv

pytestmark = pytest.mark.django_db


def test_the_tenant_tree_pages_and_keeps_its_filter(cast, client):
    for n in range(55):
        create_tenant(
            actor=cast.pat, slug=f"team-{n:02d}", display_name=f"Team {n}", parent_id=cast.research.pk
        )
    client.force_login(cast.pat)
    # the cast's 6 tenants and 55 teams: 61 rows, 50 a page
    first = client.get("/tenants/").content.decode()
    assert "Page 1 of 2" in first and 'href="?page=2"' in first
    filtered = client.get("/tenants/?q=team").content.decode()
    assert "Page 1 of 2" in filtered and 'href="?q=team&page=2"' in filtered
    assert "Team 54" in client.get("/tenants/?q=team&page=2").content.decode()


def test_the_inventory_pages_its_pools(cast, client):
    for n in range(30):
        inv.pool(f"pool-{n:02d}")
    client.force_login(cast.pat)
    html = client.get("/inventory/").content.decode()
    assert "Page 1 of 2" in html and "pool-24" in html and "pool-25" not in html
    assert "pool-29" in client.get("/inventory/?page=2").content.decode()
