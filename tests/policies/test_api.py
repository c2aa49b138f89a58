"""The policies REST API: platform-admins declare, preview, publish, diff and dry-run; bad input is
problem+json with a stable code and changes nothing; tenants read only their own admission rules."""

from __future__ import annotations

import pytest

from gpuplatform.audit.models import AuditEvent
from policies.models import AdmissionRule, PolicyRevision, SharingPolicy
from quotas.models import Flavor, PriorityClass
from tests.helpers import assert_problem
from tests.policies.factories import h100_pool

pytestmark = pytest.mark.django_db

MIG_7 = {"strategy": "mixed", "geometry": {"H100-80GB": {"1g.10gb": 7}}}


@pytest.fixture
def pool(cast):
    return h100_pool()


def test_preview_shows_the_five_dimensions_and_what_the_mode_yields(cast, api, pool):
    response = api(cast.pat).post(
        "/api/v1/sharing-policies/preview/",
        {"pool": str(pool.pk), "mode": "mig", "parameters": MIG_7},
        format="json",
    )
    assert response.status_code == 200
    body = response.json()
    assert body["valid"] is True and body["dimensions"] == [
        "isolation",
        "interference",
        "utilisation",
        "reconfiguration",
        "how_pods_ask",
    ]
    assert body["tradeoff"]["isolation"].startswith("high")
    assert body["yield"]["summary"].startswith("7 x 1g.10gb per H100 -> 56 shares of 1/7 GE (56 in all)")
    assert body["yield"]["needs_empty_nodes"] is True
    assert [row["mode"] for row in body["compare"]] == [
        "exclusive",
        "mig",
        "time-slicing",
        "mps",
        "hami",
        "dra",
    ]
    assert not SharingPolicy.objects.exists()  # a preview changes nothing


def test_declare_publish_diff_and_dry_run_over_http(cast, api, pool):
    pat = api(cast.pat)
    created = pat.post(
        "/api/v1/sharing-policies/",
        {"pool": str(pool.pk), "mode": "time-slicing", "parameters": {"replicas": 4}},
        format="json",
    )
    assert created.status_code == 201, created.json()
    assert created.json()["parameters"] == {"replicas": 4, "fail_requests_greater_than_one": False}
    first = pat.post(
        "/api/v1/policy-revisions/",
        {"pool": str(pool.pk), "note": "r1", "confirm_no_agent": True},
        format="json",
    )
    assert first.status_code == 201 and first.json()["number"] == 1
    changed = pat.patch(
        f"/api/v1/sharing-policies/{created.json()['id']}/",
        {"mode": "mig", "parameters": MIG_7},
        format="json",
    )
    assert changed.status_code == 200 and changed.json()["mode"] == "mig"
    dry = pat.post("/api/v1/policy-revisions/dry-run/", {"pool": str(pool.pk)}, format="json").json()
    assert dry["to_revision"] == 2 and dry["needs_drain"] is True and len(dry["nodes"]) == 2
    second = pat.post(
        "/api/v1/policy-revisions/", {"pool": str(pool.pk), "confirm_no_agent": True}, format="json"
    ).json()
    diff = pat.get(f"/api/v1/policy-revisions/{second['id']}/diff/").json()
    assert (diff["from"], diff["to"]) == (1, 2)
    assert {"name": "nvidia.com/mig.config", "from": "all-disabled", "to": "gpuplatform-h100-r2"} in diff[
        "labels"
    ]
    same = pat.get(f"/api/v1/policy-revisions/{first.json()['id']}/diff/?against=2").json()
    assert (same["from"], same["to"]) == (1, 2)
    listed = pat.get(f"/api/v1/policy-revisions/?pool={pool.name}").json()
    assert [r["number"] for r in listed["results"]] == [2, 1]


def test_bad_input_is_a_problem_with_a_stable_code_and_changes_nothing(cast, api, pool):
    pat = api(cast.pat)
    bad = pat.post(
        "/api/v1/sharing-policies/",
        {
            "pool": str(pool.pk),
            "mode": "mig",
            "parameters": {"geometry": {"H100-80GB": {"3g.40gb": 2, "1g.10gb": 1}}},
        },
        format="json",
    )
    assert_problem(bad, 400, "policy.mig_geometry_invalid")
    zero = pat.post(
        "/api/v1/sharing-policies/",
        {"pool": str(pool.pk), "mode": "time-slicing", "parameters": {"replicas": 0}},
        format="json",
    )
    assert_problem(zero, 400, "policy.replicas_too_low")
    assert zero.json()["errors"] == [
        {
            "field": "parameters.replicas",
            "message": "replicas must be at least 2 (got 0); one replica is the exclusive mode",
            "code": "policy.replicas_too_low",
        }
    ]
    unknown = pat.post(
        "/api/v1/policy-revisions/", {"pool": "0b7e2d2a-0000-4000-8000-000000000000"}, format="json"
    )
    assert_problem(unknown, 404, "policy.unknown_pool")
    preview_unknown = pat.post(
        "/api/v1/sharing-policies/preview/",
        {"pool": "0b7e2d2a-0000-4000-8000-000000000000", "mode": "exclusive"},
        format="json",
    )
    assert_problem(preview_unknown, 404, "policy.unknown_pool")
    assert not SharingPolicy.objects.exists() and not PolicyRevision.objects.exists()
    refusals = AuditEvent.objects.filter(action="sharing_policy.refused")
    assert refusals.count() == 2 and refusals.first().actor == cast.pat


def test_tenants_may_neither_declare_nor_publish(cast, api, pool):
    alice = api(cast.alice)
    declare = alice.post(
        "/api/v1/sharing-policies/", {"pool": str(pool.pk), "mode": "exclusive"}, format="json"
    )
    assert_problem(declare, 403, "permission_denied")
    publish = alice.post("/api/v1/policy-revisions/", {"pool": str(pool.pk)}, format="json")
    assert_problem(publish, 403, "permission_denied")
    assert alice.get("/api/v1/sharing-policies/").json()["results"] == []


def test_admission_rules_are_read_by_their_tenant_and_written_by_platform_admins(cast, api, pool):
    flavor = Flavor.objects.create(
        name="h100", pool=pool, resources=[{"name": "nvidia.com/gpu", "ge_per_unit": "1"}]
    )
    batch = PriorityClass.objects.create(name="batch", value=100)
    created = api(cast.pat).post(
        "/api/v1/admission-rules/",
        {
            "tenant": str(cast.vision.pk),
            "pool": str(pool.pk),
            "allowed_flavors": [str(flavor.pk)],
            "max_per_pod": 2,
            "allowed_priority_classes": [str(batch.pk)],
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    rule_id = created.json()["id"]
    mine = api(cast.alice).get("/api/v1/admission-rules/").json()["results"]
    assert [r["id"] for r in mine] == [rule_id] and mine[0]["max_per_pod"] == 2
    assert api(cast.bob).get(f"/api/v1/admission-rules/{rule_id}/").status_code == 404
    assert_problem(
        api(cast.alice).patch(f"/api/v1/admission-rules/{rule_id}/", {"max_per_pod": 8}, format="json"),
        403,
        "permission_denied",
    )
    twice = api(cast.pat).post(
        "/api/v1/admission-rules/", {"tenant": str(cast.vision.pk), "pool": str(pool.pk)}, format="json"
    )
    assert_problem(twice, 409, "policy.admission_rule_exists")
    assert AdmissionRule.objects.get(pk=rule_id).max_per_pod == 2
