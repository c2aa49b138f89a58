"""The agent API as an agent and an operator meet it: bootstrap tokens, registration, rotation,
revocation, reports on the node's own revisions only (docs/agent-protocol.md)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from gpuplatform.audit.models import AuditEvent
from inventory.models import Node
from policies.models import NodeAgent, NodePolicyState
from policies.node_states import NodeState
from policies.services.rollouts import advance_rollout, start_rollout
from tests.inventory import factories as inv
from tests.policies_agents.factories import bundle, revision

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet(cast):
    cluster = inv.cluster("prod-a")
    pool = inv.pool("h100", on=cluster)
    other_pool = inv.pool("l40s", on=cluster)
    return {
        "cluster": cluster,
        "pool": pool,
        "a": inv.node("gpu-a", in_pool=pool),
        "b": inv.node("gpu-b", in_pool=other_pool),
    }


def bootstrap(api, cast, cluster) -> str:
    response = api(cast.pat).post(
        "/api/v1/agent-bootstrap-tokens/",
        {"cluster": str(cluster.pk), "name": "rack-1", "expires_in_seconds": 3600},
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()["token"]


def register(token: str, node: str, cluster: str = "prod-a") -> APIClient:
    client = APIClient()
    response = client.post(
        "/api/v1/agents/register/",
        {"cluster": cluster, "node": node, "bootstrap_token": token},
        format="json",
    )
    assert response.status_code == 201, response.content
    client.credentials(HTTP_AUTHORIZATION="Agent " + response.json()["credential"])
    client.agent_id = response.json()["agent_id"]
    return client


def test_a_platform_admin_creates_a_bootstrap_token_shown_once(cast, api, fleet):
    token = bootstrap(api, cast, fleet["cluster"])
    assert token.startswith("gpb_")
    listed = api(cast.pat).get("/api/v1/agent-bootstrap-tokens/").json()["results"]
    assert [t["name"] for t in listed] == ["rack-1"]
    assert token not in str(listed)
    assert AuditEvent.objects.filter(action="agent_bootstrap_token.created").count() == 1


def test_a_tenant_admin_cannot_create_bootstrap_tokens(cast, api, fleet):
    response = api(cast.alice).post(
        "/api/v1/agent-bootstrap-tokens/",
        {"cluster": str(fleet["cluster"].pk), "name": "x", "expires_in_seconds": 3600},
        format="json",
    )
    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"


def test_an_agent_registers_with_a_bootstrap_token_for_a_node_of_its_cluster(cast, api, fleet):
    agent = register(bootstrap(api, cast, fleet["cluster"]), "gpu-a")
    row = NodeAgent.objects.get(pk=agent.agent_id)
    assert row.node.name == "gpu-a"
    assert len(row.credential_hash) == 64  # stored hashed, never as sent
    assert AuditEvent.objects.filter(action="agent.registered", object_id=str(row.pk)).exists()


@pytest.mark.parametrize(
    ("cluster", "node", "token_ok"),
    [("prod-a", "no-such-node", True), ("other", "gpu-a", True), ("prod-a", "gpu-a", False)],
)
def test_registration_refused_says_nothing_about_which_part_was_wrong(
    cast, api, fleet, cluster, node, token_ok
):
    token = bootstrap(api, cast, fleet["cluster"]) if token_ok else "gpb_forged"
    response = APIClient().post(
        "/api/v1/agents/register/",
        {"cluster": cluster, "node": node, "bootstrap_token": token},
        format="json",
    )
    assert response.status_code == 401
    assert response.json()["code"] == "bootstrap_refused"
    assert NodeAgent.objects.count() == 0
    assert AuditEvent.objects.filter(action="agent.registration_refused").count() == 1


def test_a_revoked_bootstrap_token_registers_nothing(cast, api, fleet):
    token = bootstrap(api, cast, fleet["cluster"])
    token_id = api(cast.pat).get("/api/v1/agent-bootstrap-tokens/").json()["results"][0]["id"]
    assert api(cast.pat).post(f"/api/v1/agent-bootstrap-tokens/{token_id}/revoke/").status_code == 200
    response = APIClient().post(
        "/api/v1/agents/register/",
        {"cluster": "prod-a", "node": "gpu-a", "bootstrap_token": token},
        format="json",
    )
    assert response.status_code == 401


def test_rotation_retires_the_old_credential(cast, api, fleet):
    agent = register(bootstrap(api, cast, fleet["cluster"]), "gpu-a")
    old = agent._credentials["HTTP_AUTHORIZATION"]
    response = agent.post("/api/v1/agents/rotate/")
    assert response.status_code == 200
    new = response.json()["credential"]
    stale = APIClient()
    stale.credentials(HTTP_AUTHORIZATION=old)
    assert (
        stale.post(
            "/api/v1/agents/heartbeat/", {"applied_revision": 0, "content_hash": ""}, format="json"
        ).status_code
        == 401
    )
    fresh = APIClient()
    fresh.credentials(HTTP_AUTHORIZATION="Agent " + new)
    assert (
        fresh.post(
            "/api/v1/agents/heartbeat/", {"applied_revision": 0, "content_hash": ""}, format="json"
        ).status_code
        == 204
    )
    assert NodeAgent.objects.get(pk=agent.agent_id).rotations == 1


def test_a_revoked_agent_is_answered_401(cast, api, fleet):
    agent = register(bootstrap(api, cast, fleet["cluster"]), "gpu-a")
    assert api(cast.pat).post(f"/api/v1/agents/{agent.agent_id}/revoke/").status_code == 200
    response = agent.post(
        "/api/v1/agents/heartbeat/", {"applied_revision": 0, "content_hash": ""}, format="json"
    )
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Agent")
    assert AuditEvent.objects.filter(action="agent.revoked").count() == 1


def test_registering_again_after_a_reset_revokes_the_nodes_earlier_credential(cast, api, fleet):
    token = bootstrap(api, cast, fleet["cluster"])
    first = register(token, "gpu-a")
    assert api(cast.pat).post(f"/api/v1/agents/{first.agent_id}/reset/").status_code == 200
    register(token, "gpu-a")
    assert (
        first.post(
            "/api/v1/agents/heartbeat/", {"applied_revision": 0, "content_hash": ""}, format="json"
        ).status_code
        == 401
    )
    assert NodeAgent.objects.filter(node=fleet["a"], revoked_at__isnull=True).count() == 1


def test_a_user_token_is_not_an_agent_credential(cast, api, fleet):
    for path in ("/api/v1/agents/status/", "/api/v1/agents/heartbeat/", "/api/v1/agents/rotate/"):
        assert api(cast.pat).post(path, {}, format="json").status_code == 401
    assert api(cast.pat).get("/api/v1/agents/bundle/").status_code == 401


def test_an_agent_cannot_report_on_another_nodes_revision(cast, api, fleet):
    # given a rollout on gpu-a's pool, and an agent on gpu-b (another pool)
    token = bootstrap(api, cast, fleet["cluster"])
    register(token, "gpu-a")
    intruder = register(token, "gpu-b")
    r1 = revision(fleet["pool"], bundle("all-disabled"))
    rollout = start_rollout(actor=cast.pat, pool_id=fleet["pool"].pk, revision_id=r1.pk)
    advance_rollout(rollout_id=rollout.pk)
    before = NodePolicyState.objects.get(node=fleet["a"]).state
    # when gpu-b's agent claims gpu-a's revision as applied
    response = intruder.post(
        "/api/v1/agents/status/",
        {"revision": 1, "content_hash": r1.content_hash, "state": "applied"},
        format="json",
    )
    # then it is refused and gpu-a's state is untouched
    assert response.status_code == 409
    assert response.json()["code"] == "revision_unknown"
    assert NodePolicyState.objects.get(node=fleet["a"]).state == before == NodeState.PENDING


def test_reports_move_the_node_through_its_states(cast, api, fleet):
    agent = register(bootstrap(api, cast, fleet["cluster"]), "gpu-a")
    r1 = revision(fleet["pool"], bundle("all-disabled"))
    rollout = start_rollout(actor=cast.pat, pool_id=fleet["pool"].pk, revision_id=r1.pk)
    advance_rollout(rollout_id=rollout.pk)
    post = lambda body: agent.post("/api/v1/agents/status/", body, format="json")  # noqa: E731
    assert post({"revision": 1, "content_hash": r1.content_hash, "state": "applying"}).status_code == 204
    assert NodePolicyState.objects.get(node=fleet["a"]).state == NodeState.APPLYING
    # a wrong hash is a failure, not an ack
    assert post({"revision": 1, "content_hash": "sha256:00", "state": "applied"}).status_code == 204
    row = NodePolicyState.objects.get(node=fleet["a"])
    assert (row.state, row.last_code, row.attempts) == (NodeState.FAILED, "hash_mismatch", 1)
    assert post({"revision": 1, "content_hash": r1.content_hash, "state": "applied"}).status_code == 204
    assert (
        post({"revision": 1, "content_hash": r1.content_hash, "state": "applied"}).status_code == 204
    )  # again: no-op
    row = NodePolicyState.objects.get(node=fleet["a"])
    assert (row.state, row.applied_revision, row.attempts) == (NodeState.APPLIED, 1, 0)
    assert AuditEvent.objects.filter(action="node_policy.applied", object_id=str(row.pk)).count() == 1
    # a heartbeat with another hash is drift
    agent.post(
        "/api/v1/agents/heartbeat/", {"applied_revision": 1, "content_hash": "sha256:ff"}, format="json"
    )
    assert NodePolicyState.objects.get(node=fleet["a"]).state == NodeState.DRIFT
    assert (
        post({"revision": 7, "content_hash": r1.content_hash, "state": "applied"}).json()["code"]
        == "revision_unknown"
    )


def test_a_second_rollout_on_a_pool_is_refused_while_one_runs(cast, api, fleet):
    r1 = revision(fleet["pool"], bundle("all-disabled"))
    r2 = revision(fleet["pool"], bundle("all-balanced"), needs_drain=True)
    body = {"pool": str(fleet["pool"].pk), "revision": str(r1.pk), "max_unavailable": 1}
    assert api(cast.pat).post("/api/v1/rollouts/", body, format="json").status_code == 201
    response = api(cast.pat).post("/api/v1/rollouts/", {**body, "revision": str(r2.pk)}, format="json")
    assert response.status_code == 409
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == "rollout.already_running"
    assert AuditEvent.objects.filter(action="rollout.started").count() == 1


def test_a_rollout_of_an_unknown_pool_or_another_pools_revision_is_refused(cast, api, fleet):
    r1 = revision(fleet["pool"], bundle("all-disabled"))
    other = inv.pool("other", on=fleet["cluster"])
    response = api(cast.pat).post(
        "/api/v1/rollouts/", {"pool": str(other.pk), "revision": str(r1.pk)}, format="json"
    )
    assert (response.status_code, response.json()["code"]) == (404, "revision_not_found")


def test_waves_respect_max_unavailable(cast, api, fleet):
    for n in range(3):
        inv.node(f"gpu-w{n}", in_pool=fleet["pool"])
    r1 = revision(fleet["pool"], bundle("all-disabled"))
    rollout = start_rollout(actor=cast.pat, pool_id=fleet["pool"].pk, revision_id=r1.pk, max_unavailable=2)
    advance_rollout(rollout_id=rollout.pk)
    advance_rollout(rollout_id=rollout.pk)  # idempotent: no third node while two are pending
    targeted = NodePolicyState.objects.filter(rollout=rollout)
    assert sorted(targeted.values_list("node__name", flat=True)) == ["gpu-a", "gpu-w0"]
    detail = api(cast.pat).get(f"/api/v1/rollouts/{rollout.pk}/").json()
    assert detail["progress"] == {"pending": 2}
    assert [n["node"] for n in detail["nodes"]] == ["gpu-a", "gpu-w0"]
    assert Node.objects.filter(pool=fleet["pool"]).count() == 4


def test_the_rollout_page_shows_progress_per_node_to_platform_roles_only(cast, fleet, client):
    r1 = revision(fleet["pool"], bundle("all-disabled"))
    rollout = start_rollout(actor=cast.pat, pool_id=fleet["pool"].pk, revision_id=r1.pk)
    advance_rollout(rollout_id=rollout.pk)
    client.force_login(cast.pat)
    page = client.get(f"/policies/rollouts/{rollout.pk}/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "gpu-a" in text and "pending: 1" in text
    assert client.get("/policies/rollouts/").content.decode().count(f"/policies/rollouts/{rollout.pk}/") == 1
    client.force_login(cast.alice)
    assert client.get(f"/policies/rollouts/{rollout.pk}/").status_code == 404
    assert str(rollout.pk) not in client.get("/policies/rollouts/").content.decode()
