"""The tenant tree through REST, by role, with bad input refused and nothing changed."""

from __future__ import annotations

import pytest

from tenants.models import Tenant
from tests.helpers import assert_problem, database_state

pytestmark = pytest.mark.django_db

TREE_TABLES = ("tenants.Tenant", "tenants.Membership", "tenants.TenantNamespace", "audit.AuditEvent")


def slugs(response) -> set[str]:
    return {row["slug"] for row in response.json()["results"]}


def test_platform_admin_sees_the_whole_tree(cast, api):
    response = api(cast.pat).get("/api/v1/tenants/")
    assert response.status_code == 200
    assert slugs(response) == {"acme", "research", "vision", "nlp", "globex", "globex-ml"}


def test_tenant_admin_sees_its_subtree_and_member_its_tenant(cast, api):
    assert slugs(api(cast.rita).get("/api/v1/tenants/")) == {"research", "vision", "nlp"}
    assert slugs(api(cast.alice).get("/api/v1/tenants/")) == {"vision"}
    assert slugs(api(cast.dana).get("/api/v1/tenants/")) == {"vision"}
    assert slugs(api(cast.charlie).get("/api/v1/tenants/")) == set()


def test_finance_sees_everything_but_cannot_change_tenants(cast, api):
    client = api(cast.fiona)
    assert len(client.get("/api/v1/tenants/").json()["results"]) == 6
    before = database_state(*TREE_TABLES)
    response = client.patch(f"/api/v1/tenants/{cast.vision.pk}/", {"display_name": "X"}, format="json")
    assert_problem(response, 403, "permission_denied")
    assert database_state(*TREE_TABLES) == before


def test_parent_outside_your_view_is_shown_as_null(cast, api):
    row = api(cast.alice).get(f"/api/v1/tenants/{cast.vision.pk}/").json()
    assert row["parent"] is None
    assert row["depth"] == 2
    row = api(cast.rita).get(f"/api/v1/tenants/{cast.vision.pk}/").json()
    assert row["parent"] == str(cast.research.pk)


def test_tenant_admin_creates_a_child_and_the_audit_log_records_it(cast, api):
    response = api(cast.alice).post(
        "/api/v1/tenants/",
        {
            "slug": "vision-3d",
            "display_name": "3D Vision",
            "parent_id": str(cast.vision.pk),
            "cost_centre": "CC-9",
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["depth"] == 3
    assert body["parent"] == str(cast.vision.pk)
    child = Tenant.objects.get(slug="vision-3d")
    assert child.path == f"{cast.vision.path}{child.pk.hex}/"
    event = api(cast.pat).get(
        "/api/v1/audit-events/", {"action": "tenant.created", "object_id": str(child.pk)}
    )
    [row] = event.json()["results"]
    assert row["actor"] == "alice"
    assert row["after"]["slug"] == "vision-3d"
    assert row["request_id"] == response["X-Request-ID"]


def test_member_and_viewer_cannot_create_children(cast, api):
    for user in (cast.dana, cast.victor):
        before = database_state(*TREE_TABLES)
        response = api(user).post(
            "/api/v1/tenants/",
            {"slug": "x-team", "display_name": "X", "parent_id": str(cast.vision.pk)},
            format="json",
        )
        assert_problem(response, 403, "permission_denied")
        assert database_state(*TREE_TABLES) == before


def test_only_platform_admins_create_roots(cast, api):
    assert_problem(
        api(cast.rita).post("/api/v1/tenants/", {"slug": "r", "display_name": "R"}, format="json"),
        403,
        "permission_denied",
    )
    assert (
        api(cast.pat).post("/api/v1/tenants/", {"slug": "r", "display_name": "R"}, format="json").status_code
        == 201
    )


def test_creating_under_an_invisible_parent_is_not_found(cast, api):
    before = database_state(*TREE_TABLES)
    response = api(cast.alice).post(
        "/api/v1/tenants/",
        {"slug": "sneaky", "display_name": "S", "parent_id": str(cast.nlp.pk)},
        format="json",
    )
    assert_problem(response, 404, "tenant_not_found")
    assert database_state(*TREE_TABLES) == before


@pytest.mark.parametrize(
    ("payload", "code", "field"),
    [
        ({"slug": "Bad Slug", "display_name": "x"}, "invalid_slug", "slug"),
        ({"slug": "ok-slug", "display_name": "x" * 201}, "max_length", "display_name"),
        ({"slug": "a" * 64, "display_name": "x"}, "max_length", "slug"),
        ({"slug": "ok-slug", "display_name": "x", "colour": "red"}, "unknown_field", "colour"),
        ({"slug": "ok-slug"}, "validation_failed", "display_name"),
        ({"slug": "ok-slug", "display_name": "x", "state": "deleted"}, "validation_failed", "state"),
        (
            {"slug": "ok-slug", "display_name": "x", "namespaces": [{"namespace": "Not_A_NS"}]},
            "invalid_slug",
            "namespaces[0].namespace",
        ),
    ],
)
def test_bad_tenant_input_is_a_problem_and_changes_nothing(cast, api, payload, code, field):
    payload = {**payload, "parent_id": str(cast.vision.pk)}
    before = database_state(*TREE_TABLES)
    response = api(cast.alice).post("/api/v1/tenants/", payload, format="json")
    body = assert_problem(
        response, 400, "validation_failed" if code in {"max_length", "validation_failed"} else code
    )
    assert field in {error["field"] for error in body["errors"]}, body
    if code == "max_length":
        assert any(error["code"] == "max_length" for error in body["errors"])
    assert database_state(*TREE_TABLES) == before


def test_unknown_field_is_named(cast, api):
    response = api(cast.pat).post(
        "/api/v1/tenants/", {"slug": "ok", "display_name": "x", "colour": "red"}, format="json"
    )
    body = assert_problem(response, 400, "unknown_field")
    assert body["errors"] == [{"field": "colour", "message": "Unknown field.", "code": "unknown_field"}]


def test_malformed_json_is_a_problem(cast, api):
    before = database_state(*TREE_TABLES)
    response = api(cast.pat).post("/api/v1/tenants/", data='{"slug": "x",', content_type="application/json")
    assert_problem(response, 400, "malformed_request")
    assert database_state(*TREE_TABLES) == before


def test_slug_clash_is_a_conflict(cast, api):
    before = database_state(*TREE_TABLES)
    response = api(cast.pat).post("/api/v1/tenants/", {"slug": "nlp", "display_name": "Again"}, format="json")
    assert_problem(response, 409, "slug_taken")
    response = api(cast.pat).patch(f"/api/v1/tenants/{cast.vision.pk}/", {"slug": "nlp"}, format="json")
    assert_problem(response, 409, "slug_taken")
    assert database_state(*TREE_TABLES) == before


def test_a_tenant_cannot_become_its_own_ancestor(cast, api):
    before = database_state(*TREE_TABLES)
    response = api(cast.pat).patch(
        f"/api/v1/tenants/{cast.research.pk}/", {"parent": str(cast.vision.pk)}, format="json"
    )
    assert_problem(response, 400, "tenant_cycle")
    response = api(cast.pat).patch(
        f"/api/v1/tenants/{cast.research.pk}/", {"parent": str(cast.research.pk)}, format="json"
    )
    assert_problem(response, 400, "tenant_cycle")
    assert database_state(*TREE_TABLES) == before


def test_moving_a_subtree_rewrites_every_path_and_depth(cast, api):
    # given research (depth 1) with vision and nlp (depth 2) under acme
    # when research moves under globex-ml (depth 1), so research becomes depth 2 and its teams depth 3
    response = api(cast.pat).patch(
        f"/api/v1/tenants/{cast.research.pk}/", {"parent_id": str(cast.globex_ml.pk)}, format="json"
    )
    assert response.status_code == 200, response.json()
    # then
    vision = Tenant.objects.get(pk=cast.vision.pk)
    assert vision.depth == 3
    assert (
        vision.path
        == f"/{cast.globex.pk.hex}/{cast.globex_ml.pk.hex}/{cast.research.pk.hex}/{cast.vision.pk.hex}/"
    )
    subtree = api(cast.pat).get("/api/v1/tenants/", {"within": str(cast.globex.pk)})
    assert slugs(subtree) == {"globex", "globex-ml", "research", "vision", "nlp"}


def test_tenant_admin_cannot_move_its_own_top_tenant(cast, api):
    before = database_state(*TREE_TABLES)
    response = api(cast.alice).patch(f"/api/v1/tenants/{cast.vision.pk}/", {"parent_id": None}, format="json")
    assert_problem(response, 403, "permission_denied")
    assert database_state(*TREE_TABLES) == before


def test_deleting_a_tenant_with_children_or_members_is_refused(cast, api):
    before = database_state(*TREE_TABLES)
    assert_problem(api(cast.pat).delete(f"/api/v1/tenants/{cast.research.pk}/"), 409, "tenant_not_empty")
    assert_problem(api(cast.pat).delete(f"/api/v1/tenants/{cast.vision.pk}/"), 409, "tenant_not_empty")
    assert database_state(*TREE_TABLES) == before


def test_deleting_an_empty_tenant_works_and_is_audited(cast, api):
    response = api(cast.rita).delete(f"/api/v1/tenants/{cast.nlp.pk}/")
    assert_problem(response, 409, "tenant_not_empty")  # bob is still a member
    membership = cast.nlp.memberships.get()
    assert api(cast.rita).delete(f"/api/v1/memberships/{membership.pk}/").status_code == 204
    assert api(cast.rita).delete(f"/api/v1/tenants/{cast.nlp.pk}/").status_code == 204
    assert not Tenant.objects.filter(pk=cast.nlp.pk).exists()
    actions = api(cast.pat).get("/api/v1/audit-events/", {"object_id": str(cast.nlp.pk)}).json()["results"]
    assert [row["action"] for row in actions] == ["tenant.deleted", "tenant.created"]


def test_namespaces_are_owned_once(cast, api):
    before = database_state(*TREE_TABLES)
    response = api(cast.pat).patch(
        f"/api/v1/tenants/{cast.vision.pk}/", {"namespaces": [{"namespace": "team-nlp"}]}, format="json"
    )
    assert_problem(response, 409, "namespace_taken")
    assert database_state(*TREE_TABLES) == before
    response = api(cast.pat).patch(
        f"/api/v1/tenants/{cast.vision.pk}/",
        {"namespaces": [{"cluster": "east", "namespace": "vision-east"}, {"namespace": "team-vision"}]},
        format="json",
    )
    assert response.status_code == 200
    assert sorted((n["cluster"], n["namespace"]) for n in response.json()["namespaces"]) == [
        ("", "team-vision"),
        ("east", "vision-east"),
    ]


def test_filters_and_page_size_cap(cast, api, settings):
    client = api(cast.pat)
    assert slugs(client.get("/api/v1/tenants/", {"q": "vis"})) == {"vision"}
    assert slugs(client.get("/api/v1/tenants/", {"root": "true"})) == {"acme", "globex"}
    assert slugs(client.get("/api/v1/tenants/", {"parent_slug": "research"})) == {"vision", "nlp"}
    settings.API_MAX_PAGE_SIZE = 2
    page = client.get("/api/v1/tenants/", {"page_size": 1000}).json()
    assert len(page["results"]) == 2
    assert page["count"] == 6
    assert page["next"]
