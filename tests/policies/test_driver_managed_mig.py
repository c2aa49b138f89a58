"""Driver-managed MIG: where the NVIDIA DRA driver's DynamicMIG owns the MIG layout, a sharing policy
cannot set a geometry (nor any mode that drives mig-manager), and no rollout pushes mig-parted config or
GPU Operator's MIG label there."""

from __future__ import annotations

import pytest

from gpuplatform.audit.models import AuditEvent
from inventory.models import Node
from policies.compiler import ModelCards, PoolSpec, SharingMode, SharingSpec, render_bundle, validate_policy
from policies.models import PolicyRevision, Rollout, SharingPolicy
from tests.helpers import assert_problem
from tests.policies.factories import h100_pool

MIG_7 = {"strategy": "mixed", "geometry": {"H100-80GB": {"1g.10gb": 7}}}
LABEL = "driver-managed MIG (DRA driver, DynamicMIG)"


def _spec(*managed: str) -> PoolSpec:
    return PoolSpec(
        cluster="c",
        name="h100",
        models=(ModelCards("H100-80GB", 8, 2),),
        node_names=("h100-node-0", "h100-node-1"),
        driver_managed_mig_nodes=managed,
    )


def test_a_geometry_on_a_driver_managed_pool_is_one_problem_saying_why() -> None:
    problems = validate_policy(spec=SharingSpec(SharingMode.MIG, MIG_7), pool=_spec("h100-node-0"))
    assert [(p.code, p.field) for p in problems] == [("policy.driver_managed_mig", "parameters.geometry")]
    assert "h100-node-0" in problems[0].message and "DynamicMIG" in problems[0].message
    assert "mig-parted must not run beside it" in problems[0].message
    # The same geometry is fine where mig-parted owns MIG.
    assert validate_policy(spec=SharingSpec(SharingMode.MIG, MIG_7), pool=_spec()) == []


def test_only_dra_may_be_declared_there_and_its_bundle_sets_no_mig_label() -> None:
    slicing = SharingSpec(SharingMode.TIME_SLICING, {"replicas": 4})
    assert [(p.code, p.field) for p in validate_policy(spec=slicing, pool=_spec("h100-node-1"))] == [
        ("policy.driver_managed_mig", "mode")
    ]
    dra = SharingSpec(SharingMode.DRA, {})
    assert validate_policy(spec=dra, pool=_spec("h100-node-1")) == []
    managed = render_bundle(spec=dra, pool=_spec("h100-node-1"), revision=1)
    assert managed["labels"] == {"nvidia.com/gpu.deploy.device-plugin": "false"}
    assert managed["files"] == [] and managed["configmaps"] == []
    # Elsewhere DRA keeps turning MIG off through mig-manager, as before.
    assert (
        render_bundle(spec=dra, pool=_spec(), revision=1)["labels"]["nvidia.com/mig.config"] == "all-disabled"
    )


@pytest.mark.django_db
def test_the_api_refuses_a_geometry_with_a_problem_and_changes_nothing(cast, api) -> None:
    pool = h100_pool()
    Node.objects.filter(pool=pool).update(driver_managed_mig=True)
    response = api(cast.pat).post(
        "/api/v1/sharing-policies/", {"pool": str(pool.pk), "mode": "mig", "parameters": MIG_7}, format="json"
    )
    body = assert_problem(response, 400, "policy.driver_managed_mig")
    assert "A MIG geometry cannot be set here" in body["detail"]
    assert not SharingPolicy.objects.exists()
    assert AuditEvent.objects.filter(action="sharing_policy.refused").count() == 1


@pytest.mark.django_db
def test_a_rollout_refused_on_a_driver_managed_mig_pool(cast, api) -> None:
    pool = h100_pool()
    pat = api(cast.pat)
    # Declared and published while mig-parted still owned MIG: the bundle carries mig.config.
    assert (
        pat.post(
            "/api/v1/sharing-policies/",
            {"pool": str(pool.pk), "mode": "mig", "parameters": MIG_7},
            format="json",
        ).status_code
        == 201
    )
    first = pat.post(
        "/api/v1/policy-revisions/", {"pool": str(pool.pk), "confirm_no_agent": True}, format="json"
    )
    assert first.status_code == 201, first.content
    # Then the DRA driver with DynamicMIG took the nodes over (the slice sync sets this flag).
    Node.objects.filter(pool=pool).update(driver_managed_mig=True)
    body = {"pool": str(pool.pk), "revision": first.json()["id"], "max_unavailable": 1}
    refused = assert_problem(
        pat.post("/api/v1/rollouts/", body, format="json"), 409, "rollout.driver_managed_mig"
    )
    assert "label nvidia.com/mig.config=" in refused["detail"]
    assert "file mig-parted/config.yaml" in refused["detail"]
    assert "h100-node-0, h100-node-1" in refused["detail"]
    assert not Rollout.objects.exists()
    assert not AuditEvent.objects.filter(action="rollout.started").exists()
    audited = AuditEvent.objects.get(action="rollout.refused")
    assert (audited.actor, audited.after["code"]) == (cast.pat, "rollout.driver_managed_mig")
    # Declaring dra instead rolls out: nothing in that bundle drives mig-parted.
    assert (
        pat.patch(
            f"/api/v1/sharing-policies/{SharingPolicy.objects.get(pool=pool).pk}/",
            {"mode": "dra", "parameters": {}},
            format="json",
        ).status_code
        == 200
    )
    second = pat.post(
        "/api/v1/policy-revisions/", {"pool": str(pool.pk), "confirm_no_agent": True}, format="json"
    )
    assert second.status_code == 201, second.content
    assert "nvidia.com/mig.config" not in PolicyRevision.objects.get(pk=second.json()["id"]).bundle["labels"]
    started = pat.post("/api/v1/rollouts/", {**body, "revision": second.json()["id"]}, format="json")
    assert started.status_code == 201, started.content


@pytest.mark.django_db
def test_the_policy_page_shows_the_detected_mode_and_why_there_is_no_geometry(cast, client) -> None:
    pool = h100_pool()
    Node.objects.filter(pool=pool).update(driver_managed_mig=True)
    client.force_login(cast.pat)
    page = client.get(f"/policies/pools/{pool.pk}/").content.decode()
    assert f'<span data-testid="detected-mode">{LABEL}</span>' in page
    assert 'data-testid="driver-managed-mig"' in page and "No MIG geometry on this pool." in page
    assert LABEL in client.get("/policies/").content.decode()
    # Choosing MIG in the form anyway: the problem says why, and nothing is saved.
    refused = client.post(
        f"/policies/pools/{pool.pk}/",
        {"intent": "save", "mode": "mig", "mig_strategy": "mixed", "geometry": "H100-80GB: 1g.10gb=7"},
    ).content.decode()
    assert (
        'data-code="policy.driver_managed_mig"' in refused and "A MIG geometry cannot be set here" in refused
    )
    assert not SharingPolicy.objects.exists()
