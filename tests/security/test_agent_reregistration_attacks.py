"""Issue 26, finding 5: one bootstrap token re-registered any node of its cluster, kicking out the real
agent (its credential answered 401) and letting the holder ack revisions for that node; revoking an
agent did not stick while the token was valid.

Now a bootstrap token registers a node that has no agent, or one a platform-admin reset; anything else
is a 409 that changes nothing and is audited.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from gpuplatform.audit.models import AuditEvent
from policies.models import NodeAgent
from policies.services.agents import create_bootstrap_token
from tests.helpers import assert_problem, database_state
from tests.inventory import factories as inv
from tests.policies_agents.conftest import agent_factory, public_key_file, push_server, wait_for  # noqa: F401

pytestmark = pytest.mark.django_db

REGISTER = "/api/v1/agents/register/"
HEARTBEAT = {"applied_revision": 0, "content_hash": ""}


@pytest.fixture
def cluster(cast):
    cluster = inv.cluster("prod-a")
    inv.node("gpu-a", in_pool=inv.pool("h100", on=cluster))
    return cluster


@pytest.fixture
def bootstrap_token(cast, api, cluster) -> str:
    response = api(cast.pat).post(
        "/api/v1/agent-bootstrap-tokens/",
        {"cluster": str(cluster.pk), "name": "rack-1", "expires_in_seconds": 3600},
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()["token"]


def register(token: str, node: str = "gpu-a"):
    return APIClient().post(
        REGISTER, {"cluster": "prod-a", "node": node, "bootstrap_token": token}, format="json"
    )


def agent_client(answer) -> tuple[APIClient, str]:
    """The registered agent's client, and its id."""
    assert answer.status_code == 201, answer.content
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Agent " + answer.json()["credential"])
    return client, answer.json()["agent_id"]


def test_a_bootstrap_token_cannot_take_over_a_node_whose_agent_is_live(cast, bootstrap_token):
    # given the real agent of gpu-a, registered with the cluster's bootstrap token
    real, _ = agent_client(register(bootstrap_token))
    before = database_state("policies.NodeAgent", "policies.AgentBootstrapToken")

    # when another holder of that token registers gpu-a
    answer = register(bootstrap_token)

    # then it is refused, nothing changed, the real agent still works, and the attempt is on record
    assert_problem(answer, 409, "agent_already_registered")
    assert "credential" not in answer.json()
    assert database_state("policies.NodeAgent", "policies.AgentBootstrapToken") == before
    assert real.post("/api/v1/agents/heartbeat/", HEARTBEAT, format="json").status_code == 204
    refused = AuditEvent.objects.get(action="agent.registration_refused")
    assert refused.object_repr == "prod-a/gpu-a" and refused.after["code"] == "agent_already_registered"


def test_a_revoked_agent_stays_revoked_while_the_bootstrap_token_is_valid(cast, api, bootstrap_token):
    _, real_id = agent_client(register(bootstrap_token))
    assert api(cast.pat).post(f"/api/v1/agents/{real_id}/revoke/").status_code == 200

    answer = register(bootstrap_token)

    assert_problem(answer, 409, "agent_revoked")
    assert NodeAgent.objects.filter(revoked_at__isnull=True).count() == 0


def test_a_platform_admin_resets_a_node_so_that_it_registers_again_once(cast, api, bootstrap_token):
    real, real_id = agent_client(register(bootstrap_token))

    # a tenant-admin may not; a platform-admin may, and it is audited
    assert api(cast.alice).post(f"/api/v1/agents/{real_id}/reset/").status_code == 404
    reset = api(cast.pat).post(f"/api/v1/agents/{real_id}/reset/")
    assert reset.status_code == 200 and reset.json()["revoked_at"] is not None

    # the old credential is dead, one new registration succeeds, the next is refused again
    assert real.post("/api/v1/agents/heartbeat/", HEARTBEAT, format="json").status_code == 401
    again, _ = agent_client(register(bootstrap_token))
    assert again.post("/api/v1/agents/heartbeat/", HEARTBEAT, format="json").status_code == 204
    assert_problem(register(bootstrap_token), 409, "agent_already_registered")
    assert AuditEvent.objects.filter(action="agent.reset", actor=cast.pat).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_restarted_agent_keeps_its_credential_and_needs_no_new_registration(
    cast,
    push_server,  # noqa: F811
    agent_factory,  # noqa: F811
):
    cluster = inv.cluster("prod-a")
    inv.node("gpu-a", in_pool=inv.pool("h100", on=cluster))
    token = create_bootstrap_token(
        actor=cast.pat, cluster_id=cluster.pk, name="t", expires_in=timedelta(hours=1)
    )
    agent = agent_factory(server=push_server.url, cluster="prod-a", node="gpu-a", token=token.secret)
    first = wait_for(
        lambda: NodeAgent.objects.filter(last_seen_at__isnull=False).first(),
        seconds=60,
        why=lambda: agent.output()[-2000:],
    )

    agent.stop()
    agent.start()

    wait_for(
        lambda: NodeAgent.objects.get(pk=first.pk).last_seen_at > first.last_seen_at,
        seconds=60,
        why=lambda: agent.output()[-2000:],
    )
    assert list(NodeAgent.objects.values_list("pk", "revoked_at")) == [(first.pk, None)]
    assert not AuditEvent.objects.filter(action="agent.registration_refused").exists()
