"""The demo organisation: seeded idempotently, and its printed tokens work."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from demo.seed import seed_demo_organisation
from tenants.models import Membership, Tenant

pytestmark = pytest.mark.django_db


def test_the_demo_seeds_a_tree_and_tokens_for_two_team_admins():
    first = seed_demo_organisation()
    second = seed_demo_organisation()  # running `make demo` twice must not duplicate anything
    assert Tenant.objects.count() == 9
    assert Tenant.objects.filter(depth=2).count() == 5
    assert Membership.objects.count() == 10
    assert first.tokens.keys() == second.tokens.keys()
    for who, token in second.tokens.items():
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        me = client.get("/api/v1/me/").json()
        assert who.startswith(me["username"])
        assert [m["role"] for m in me["memberships"]] == ["tenant-admin"]
    stale = APIClient()
    stale.credentials(HTTP_AUTHORIZATION=f"Bearer {next(iter(first.tokens.values()))}")
    assert stale.get("/api/v1/me/").status_code == 401  # the previous run's tokens were revoked
