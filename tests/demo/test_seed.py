"""The demo organisation: seeded idempotently, and its printed tokens work, run after run."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from demo.seed import seed_demo_organisation
from tenants.models import Membership, Tenant

pytestmark = pytest.mark.django_db


def _me(token):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client.get("/api/v1/me/")


def test_the_demo_seeds_a_tree_and_tokens_for_two_team_admins(tmp_path):
    seed_demo_organisation(token_file=tmp_path / "tokens.json")
    second = seed_demo_organisation(token_file=tmp_path / "tokens.json")  # `make demo` twice
    assert Tenant.objects.count() == 9
    assert Tenant.objects.filter(depth=2).count() == 5
    assert Membership.objects.count() == 10
    for who, token in second.tokens.items():
        me = _me(token).json()
        assert who.startswith(me["username"])
        assert [m["role"] for m in me["memberships"]] == ["tenant-admin"]


def test_tokens_printed_by_an_earlier_run_keep_working_on_the_next(tmp_path):
    first = seed_demo_organisation(token_file=tmp_path / "tokens.json")
    second = seed_demo_organisation(token_file=tmp_path / "tokens.json")
    assert second.tokens == first.tokens
    for token in first.tokens.values():
        assert _me(token).status_code == 200
    assert (tmp_path / "tokens.json").stat().st_mode & 0o077 == 0  # readable by its owner only


def test_a_run_without_the_kept_tokens_revokes_the_old_ones_and_prints_new_ones(tmp_path):
    first = seed_demo_organisation(token_file=tmp_path / "tokens.json")
    (tmp_path / "tokens.json").unlink()
    second = seed_demo_organisation(token_file=tmp_path / "tokens.json")
    assert set(second.tokens.values()).isdisjoint(first.tokens.values())
    assert _me(next(iter(first.tokens.values()))).status_code == 401
    assert _me(next(iter(second.tokens.values()))).status_code == 200
