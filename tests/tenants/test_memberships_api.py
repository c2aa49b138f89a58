"""Memberships through REST: who may grant which role, and what each role may see."""

from __future__ import annotations

import pytest

from tenants.models import Membership
from tests.helpers import assert_problem, database_state

pytestmark = pytest.mark.django_db

TABLES = ("tenants.Membership", "audit.AuditEvent")


def test_tenant_admin_adds_a_member_and_it_is_audited(cast, api):
    response = api(cast.alice).post(
        "/api/v1/memberships/",
        {"tenant": str(cast.vision.pk), "user": "charlie", "role": "viewer"},
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert response.json()["tenant_slug"] == "vision"
    assert Membership.objects.get(user=cast.charlie).role == "viewer"
    # charlie now sees vision, and only vision
    assert [t["slug"] for t in api(cast.charlie).get("/api/v1/tenants/").json()["results"]] == ["vision"]
    [event] = (
        api(cast.pat)
        .get("/api/v1/audit-events/", {"action": "membership.created", "actor": "alice"})
        .json()["results"]
    )
    assert event["after"]["role"] == "viewer"


def test_members_see_the_roster_of_their_tenant_only(cast, api):
    rows = api(cast.dana).get("/api/v1/memberships/").json()["results"]
    assert {(r["user"], r["tenant_slug"]) for r in rows} == {
        ("alice", "vision"),
        ("dana", "vision"),
        ("victor", "vision"),
    }


@pytest.mark.parametrize(
    ("payload", "status", "code"),
    [
        ({"user": "nobody", "role": "member"}, 400, "unknown_user"),
        ({"user": "dana", "role": "member"}, 409, "duplicate_membership"),
        ({"user": "charlie", "role": "owner"}, 400, "validation_failed"),
        ({"user": "charlie", "role": "member", "extra": 1}, 400, "unknown_field"),
    ],
)
def test_bad_membership_input_changes_nothing(cast, api, payload, status, code):
    before = database_state(*TABLES)
    response = api(cast.alice).post(
        "/api/v1/memberships/", {"tenant": str(cast.vision.pk), **payload}, format="json"
    )
    assert_problem(response, status, code)
    assert database_state(*TABLES) == before


def test_member_cannot_manage_memberships(cast, api):
    before = database_state(*TABLES)
    response = api(cast.dana).post(
        "/api/v1/memberships/",
        {"tenant": str(cast.vision.pk), "user": "charlie", "role": "member"},
        format="json",
    )
    assert_problem(response, 403, "permission_denied")
    victor = Membership.objects.get(user=cast.victor)
    assert_problem(
        api(cast.dana).patch(f"/api/v1/memberships/{victor.pk}/", {"role": "member"}, format="json"),
        403,
        "permission_denied",
    )
    assert database_state(*TABLES) == before


def test_you_cannot_change_your_own_membership(cast, api):
    mine = Membership.objects.get(user=cast.alice)
    before = database_state(*TABLES)
    assert_problem(api(cast.alice).delete(f"/api/v1/memberships/{mine.pk}/"), 403, "own_membership")
    assert database_state(*TABLES) == before


def test_role_change_and_removal(cast, api):
    victor = Membership.objects.get(user=cast.victor)
    response = api(cast.rita).patch(f"/api/v1/memberships/{victor.pk}/", {"role": "member"}, format="json")
    assert response.status_code == 200
    assert response.json()["role"] == "member"
    assert api(cast.rita).delete(f"/api/v1/memberships/{victor.pk}/").status_code == 204
    assert not Membership.objects.filter(pk=victor.pk).exists()
    actions = [
        e["action"]
        for e in api(cast.pat).get("/api/v1/audit-events/", {"object_id": str(victor.pk)}).json()["results"]
    ]
    assert actions == ["membership.deleted", "membership.updated", "membership.created"]
