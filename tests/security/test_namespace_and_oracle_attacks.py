"""Findings 3 and 6: a tenant-admin claiming any namespace (kube-system included), and answers that
confirm another tenant exists. alice administers vision; research (vision's parent) and nlp (its
sibling, owning team-nlp) are invisible to her."""

from __future__ import annotations

import json
import uuid

import pytest

from quotas.models import CapacityRequest
from tenants.models import TenantNamespace
from tests.helpers import assert_problem, database_state
from tests.quotas.conftest import make_catalog

pytestmark = pytest.mark.django_db


def set_namespaces(client, tenant, *names):
    return client.patch(
        f"/api/v1/tenants/{tenant.pk}/", {"namespaces": [{"namespace": n} for n in names]}, format="json"
    )


@pytest.mark.parametrize("namespace", ["kube-system", "gpu-operator", "default", "kube-public"])
def test_nobody_claims_a_system_namespace_not_even_a_platform_admin(cast, api, namespace):
    before = database_state("tenants.TenantNamespace")

    assert_problem(
        set_namespaces(api(cast.alice), cast.vision, "team-vision", namespace), 400, "system_namespace"
    )
    assert_problem(
        set_namespaces(api(cast.pat), cast.vision, "team-vision", namespace), 400, "system_namespace"
    )
    assert database_state("tenants.TenantNamespace") == before


def test_a_tenant_admin_cannot_claim_an_unowned_namespace_without_a_delegated_prefix(cast, api):
    response = set_namespaces(api(cast.alice), cast.vision, "team-vision", "finance-prod")

    assert_problem(response, 403, "namespace_not_delegated")
    assert not TenantNamespace.objects.filter(namespace="finance-prod").exists()


def test_a_tenant_admin_assigns_namespaces_within_the_prefix_a_platform_admin_delegated(cast, api):
    assert (
        api(cast.pat).patch(
            f"/api/v1/tenants/{cast.vision.pk}/", {"namespace_prefix": "vision-"}, format="json"
        )
    ).status_code == 200

    inside = set_namespaces(api(cast.alice), cast.vision, "team-vision", "vision-eval")
    outside = set_namespaces(api(cast.alice), cast.vision, "team-vision", "vision-eval", "other-team")

    assert inside.status_code == 200, inside.json()
    assert sorted(n["namespace"] for n in inside.json()["namespaces"]) == ["team-vision", "vision-eval"]
    assert_problem(outside, 403, "namespace_not_delegated")


def test_only_a_platform_admin_delegates_a_prefix(cast, api):
    response = api(cast.alice).patch(
        f"/api/v1/tenants/{cast.vision.pk}/", {"namespace_prefix": ""}, format="json"
    )
    assert response.status_code == 200  # unchanged: nothing to refuse
    refused = api(cast.alice).patch(
        f"/api/v1/tenants/{cast.vision.pk}/", {"namespace_prefix": "x"}, format="json"
    )

    assert_problem(refused, 403, "set_from_above")


def test_filtering_by_an_invisible_parent_answers_as_for_an_absent_one(cast, api):
    client = api(cast.alice)

    by_invisible_slug = client.get("/api/v1/tenants/?parent_slug=research").json()
    by_absent_slug = client.get("/api/v1/tenants/?parent_slug=no-such-tenant").json()
    by_invisible_id = client.get(f"/api/v1/tenants/?parent={cast.research.pk}").json()
    by_absent_id = client.get(f"/api/v1/tenants/?parent={uuid.uuid4()}").json()

    assert by_invisible_slug["results"] == by_absent_slug["results"] == []
    assert by_invisible_id["results"] == by_absent_id["results"] == []


def test_naming_an_invisible_parent_answers_as_naming_an_absent_one(cast, api):
    client = api(cast.alice)

    current_parent = client.patch(
        f"/api/v1/tenants/{cast.vision.pk}/", {"parent_id": str(cast.research.pk)}, format="json"
    )
    random_parent = client.patch(
        f"/api/v1/tenants/{cast.vision.pk}/", {"parent_id": str(uuid.uuid4())}, format="json"
    )

    assert_problem(current_parent, 404, "tenant_not_found")
    assert_problem(random_parent, 404, "tenant_not_found")
    assert current_parent.json()["detail"] == random_parent.json()["detail"]


def test_a_namespace_conflict_never_names_the_other_tenant(cast, api):
    response = set_namespaces(api(cast.pat), cast.vision, "team-vision", "team-nlp")

    body = assert_problem(response, 409, "namespace_taken")
    assert "another tenant" in body["detail"] and "nlp'" not in body["detail"] and "NLP" not in body["detail"]


def test_a_preemption_message_never_names_the_preempting_tenant_or_its_request(cast, api):
    make_catalog(cast, physical=8, vision=4, nlp=4)
    borrower = (
        api(cast.alice)
        .post(
            "/api/v1/capacity-requests/", {"tenant": "vision", "flavor": "h100", "amount": 8}, format="json"
        )
        .json()
    )
    assert borrower["state"] == "admitted", borrower

    reclaim = (
        api(cast.bob)
        .post("/api/v1/capacity-requests/", {"tenant": "nlp", "flavor": "h100", "amount": 4}, format="json")
        .json()
    )

    victim = CapacityRequest.objects.get(pk=borrower["id"])
    assert victim.state == "preempted"
    seen_by_alice = api(cast.alice).get(f"/api/v1/capacity-requests/{victim.pk}/").json()
    assert "another tenant" in seen_by_alice["message"]
    assert "nlp" not in seen_by_alice["message"] and reclaim["id"] not in seen_by_alice["message"]
    # nor do the request's transitions, which its detail carries
    assert seen_by_alice["transitions"] and reclaim["id"] not in json.dumps(seen_by_alice)
