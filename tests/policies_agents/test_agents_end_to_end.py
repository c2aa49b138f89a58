"""End to end over kubesim, with each node's agent a separate `gpuplatform-agent` process and the
control plane served by uvicorn: a pool goes from exclusive to MIG mixed, kubesim's mig-manager plays
the nodes, a node running a GPU pod blocks until drained, a failing node rolls back, and the audit
log tells the story."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from gpuplatform.audit.models import AuditEvent
from inventory.models import NodePool, ShareableUnit
from inventory.services import create_cluster
from inventory.sync.service import sync_cluster
from policies.models import NodePolicyState, PolicyRevision, Rollout, RolloutState
from policies.node_states import NodeState
from policies.services.agents import create_bootstrap_token
from policies.services.rollouts import advance_rollout, start_rollout
from tests.policies_agents.conftest import wait_for
from tests.policies_agents.factories import bundle, revision

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

H100 = "NVIDIA-H100-80GB-HBM3"


def mig_mixed(config: str) -> dict[str, Any]:
    body = bundle(config)
    body["labels"]["nvidia.com/mig.strategy"] = "mixed"
    return body


@pytest.fixture
def fleet(cast, kubesim_factory, settings):
    settings.POLICY_RETRY_BASE_SECONDS = 0  # retries at once: the suite checks they happen, not when
    sim = kubesim_factory(scenario="exclusive", nodes=6, seed=3, controllers=True)
    core = k8s.CoreV1Api(sim.api_client())
    # Empty GPU nodes (the scenario's tenant pods hold GPUs); the blocking pod is added per test.
    for pod in core.list_pod_for_all_namespaces().items:
        if pod.metadata.namespace.startswith(("team-", "sandbox-")):
            try:
                core.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0)
            except ApiException as exc:
                if exc.status != 404:  # the scenario's own controllers may have ended it first
                    raise
    cluster = create_cluster(actor=cast.pat, name="sim", kubeconfig=sim.kubeconfig_path.read_text())
    sync_cluster(cluster_id=cluster.pk)
    pool = NodePool.objects.get(cluster=cluster, name=H100)
    nodes = sorted(pool.nodes.values_list("name", flat=True))
    token = create_bootstrap_token(
        actor=cast.pat, cluster_id=cluster.pk, name="e2e", expires_in=timedelta(hours=1)
    )
    return {"sim": sim, "core": core, "cluster": cluster, "pool": pool, "nodes": nodes, "token": token.secret}


def states(pool) -> dict[str, str]:
    return dict(NodePolicyState.objects.filter(node__pool=pool).values_list("node__name", "state"))


def drive(rollout_id):
    return lambda: advance_rollout(rollout_id=rollout_id)


def finished(rollout_id) -> bool:
    return Rollout.objects.get(pk=rollout_id).state != RolloutState.RUNNING


def gpu_pod(node: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "training-0", "namespace": "team-vision"},
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": "main",
                    "image": "trainer:1",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}},
                }
            ],
        },
    }


def start_agents(fleet, push_server, agent_factory, hooks_for=None):
    agents = {}
    for node in fleet["nodes"]:
        agents[node] = agent_factory(
            server=push_server.url,
            cluster="sim",
            node=node,
            token=fleet["token"],
            kubeconfig=fleet["sim"].kubeconfig_path,
            hooks=(hooks_for or {}).get(node),
        )
    return agents


def logs(agents, server=None) -> str:
    text = "\n".join(f"--- {name}\n{agent.output()[-1500:]}" for name, agent in agents.items())
    if server is not None:
        text += "\n--- uvicorn\n" + server.log.read_text(errors="replace")[-3000:]
    return text


def test_a_pool_goes_from_exclusive_to_mig_mixed_and_a_busy_node_waits_until_drained(
    cast, fleet, push_server, agent_factory
):
    pool, core = fleet["pool"], fleet["core"]
    busy, *idle = fleet["nodes"]
    core.create_namespaced_pod("team-vision", gpu_pod(busy))
    agents = start_agents(fleet, push_server, agent_factory)
    # r1: the exclusive bundle everywhere, two nodes at a time
    r1 = revision(pool, bundle("all-disabled"))
    first = start_rollout(actor=cast.pat, pool_id=pool.pk, revision_id=r1.pk, max_unavailable=2)
    wait_for(
        lambda: finished(first.pk),
        seconds=60,
        step=drive(first.pk),
        why=lambda: f"{states(pool)}\n{logs(agents, push_server)}",
    )
    assert Rollout.objects.get(pk=first.pk).state == RolloutState.SUCCEEDED
    assert set(states(pool).values()) == {NodeState.APPLIED}
    # r2: MIG mixed, a planned operation, drain not approved
    r2 = revision(pool, mig_mixed("all-balanced"), needs_drain=True)
    second = start_rollout(actor=cast.pat, pool_id=pool.pk, revision_id=r2.pk, max_unavailable=3)
    wait_for(
        lambda: (
            states(pool) == {busy: NodeState.BLOCKED, **dict.fromkeys(idle, NodeState.APPLIED)}
            and all(NodePolicyState.objects.get(node__name=n).verified for n in idle)
        ),
        seconds=90,
        step=drive(second.pk),
        why=lambda: f"{states(pool)}\n{logs(agents, push_server)}",
    )
    blocked = NodePolicyState.objects.get(node__name=busy)
    assert blocked.last_code == "gpu_pods_running"
    assert "team-vision/training-0" in blocked.last_message
    assert blocked.applied_revision == 1  # nothing was delivered to it
    # the operator drains the node by hand: the rollout goes on by itself
    core.delete_namespaced_pod("training-0", "team-vision")
    wait_for(
        lambda: finished(second.pk),
        seconds=90,
        step=drive(second.pk),
        why=lambda: f"{states(pool)}\n{logs(agents, push_server)}",
    )
    assert Rollout.objects.get(pk=second.pk).state == RolloutState.SUCCEEDED
    rows = NodePolicyState.objects.filter(node__pool=pool)
    assert {(r.state, r.applied_revision, r.applied_hash) for r in rows} == {
        (NodeState.APPLIED, 2, r2.content_hash)
    }
    # every node shows the geometry: mig-manager's label, the agent's NVML report, and the inventory
    for node in fleet["nodes"]:
        labels = core.read_node(node).metadata.labels
        assert (labels["nvidia.com/mig.config"], labels["nvidia.com/mig.config.state"]) == (
            "all-balanced",
            "success",
        )
    report = NodePolicyState.objects.get(node__name=busy).gpus
    assert len(report) == 8 and all(g["mig_mode"] for g in report)
    assert sorted(d["profile"] for d in report[0]["mig_devices"]) == [
        "1g.10gb",
        "1g.10gb",
        "2g.20gb",
        "3g.40gb",
    ]
    sync_cluster(cluster_id=fleet["cluster"].pk)
    profiles = set(ShareableUnit.objects.filter(node__pool=pool).values_list("mig_profile", flat=True))
    assert {"1g.10gb", "2g.20gb", "3g.40gb"} <= profiles
    # the audit log tells the story
    actions = list(
        AuditEvent.objects.filter(object_id__in=[str(r.pk) for r in rows]).values_list("action", flat=True)
    )
    assert {
        "node_policy.blocked",
        "node_policy.pending",
        "node_policy.applying",
        "node_policy.applied",
        "node_policy.verified",
    } <= set(actions)
    assert AuditEvent.objects.filter(action="rollout.succeeded", object_id=str(second.pk)).exists()
    # files landed whole on every node
    for agent in agents.values():
        etc = agent.config_path.parent / "etc" / "current"
        assert (etc / "mig-parted" / "config.yaml").read_text().startswith("version: v1")


def test_a_node_that_keeps_failing_rolls_the_pool_back_to_the_previous_bundle(
    cast, fleet, push_server, agent_factory
):
    pool = fleet["pool"]
    failing = fleet["nodes"][-1]
    # This node's local hook refuses revision 2 only (the hook comes from its own configuration).
    hooks = {failing: [{"name": "refuse-r2", "command": ["sh", "-c", 'test "$GPUPLATFORM_REVISION" != 2']}]}
    agents = start_agents(fleet, push_server, agent_factory, hooks_for=hooks)
    r1 = revision(pool, bundle("all-disabled", note="one"))
    first = start_rollout(actor=cast.pat, pool_id=pool.pk, revision_id=r1.pk, max_unavailable=3)
    wait_for(
        lambda: finished(first.pk),
        seconds=60,
        step=drive(first.pk),
        why=lambda: f"{states(pool)}\n{logs(agents, push_server)}",
    )
    r2 = revision(pool, bundle("all-disabled", note="two"))
    second = start_rollout(actor=cast.pat, pool_id=pool.pk, revision_id=r2.pk, max_unavailable=3)
    wait_for(
        lambda: finished(second.pk),
        seconds=90,
        step=drive(second.pk),
        why=lambda: f"{states(pool)}\n{logs(agents, push_server)}",
    )
    second.refresh_from_db()
    assert second.state == RolloutState.FAILED
    back = second.rolled_back_by
    assert back is not None and back.kind == "rollback"
    r3 = PolicyRevision.objects.get(pk=back.revision_id)
    assert (r3.number, r3.content_hash, r3.note) == (3, r1.content_hash, "rollback of r2 to r1")
    assert f"failed on {failing} (hook_failed)" in second.message
    wait_for(
        lambda: finished(back.pk),
        seconds=90,
        step=drive(back.pk),
        why=lambda: f"{states(pool)}\n{logs(agents, push_server)}",
    )
    assert Rollout.objects.get(pk=back.pk).state == RolloutState.SUCCEEDED
    rows = NodePolicyState.objects.filter(node__pool=pool)
    assert {(r.state, r.applied_hash) for r in rows} == {(NodeState.APPLIED, r1.content_hash)}
    # the failing node tried POLICY_MAX_ATTEMPTS times, each failure audited
    failures = AuditEvent.objects.filter(action="node_policy.failed", object_repr__contains="").filter(
        after__node=failing
    )
    assert failures.count() == 3
    note = agents[failing].config_path.parent / "etc" / "current" / "note.txt"
    assert note.read_text() == "one"  # what it runs: r3 carries r1's files


def test_with_approval_a_busy_node_is_cordoned_drained_through_the_eviction_api_and_uncordoned(
    cast, fleet, push_server, agent_factory
):
    pool, core, sim = fleet["pool"], fleet["core"], fleet["sim"]
    busy = fleet["nodes"][0]
    pod = gpu_pod(busy)
    pod["metadata"]["labels"] = {"app": "training"}
    core.create_namespaced_pod("team-vision", pod)
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "training", "namespace": "team-vision"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "training"}}},
    }
    k8s.PolicyV1Api(sim.api_client()).create_namespaced_pod_disruption_budget("team-vision", budget)
    agents = start_agents(fleet, push_server, agent_factory)
    r1 = revision(pool, bundle("all-disabled"))
    first = start_rollout(actor=cast.pat, pool_id=pool.pk, revision_id=r1.pk, max_unavailable=3)
    wait_for(
        lambda: finished(first.pk),
        seconds=60,
        step=drive(first.pk),
        why=lambda: f"{states(pool)}\n{logs(agents, push_server)}",
    )
    r2 = revision(pool, mig_mixed("all-balanced"), needs_drain=True)
    second = start_rollout(
        actor=cast.pat, pool_id=pool.pk, revision_id=r2.pk, max_unavailable=1, approve_drain=True
    )
    # the budget allows no disruption: the node is cordoned, the eviction refused, the node blocked
    row = wait_for(
        lambda: NodePolicyState.objects.filter(node__name=busy, state=NodeState.BLOCKED).first(),
        seconds=60,
        step=drive(second.pk),
        why=lambda: f"{states(pool)}",
    )
    assert "eviction refused by a PodDisruptionBudget for team-vision/training-0" in row.last_message
    assert core.read_node(busy).spec.unschedulable is True
    # the owner lifts the budget: the next passes evict, the pod ends, the node applies and reopens
    k8s.PolicyV1Api(sim.api_client()).delete_namespaced_pod_disruption_budget("training", "team-vision")
    wait_for(
        lambda: finished(second.pk),
        seconds=120,
        step=drive(second.pk),
        why=lambda: f"{states(pool)}\n{logs(agents, push_server)}",
    )
    assert Rollout.objects.get(pk=second.pk).state == RolloutState.SUCCEEDED
    assert not core.read_node(busy).spec.unschedulable
    assert core.read_node(busy).metadata.labels["nvidia.com/mig.config"] == "all-balanced"
    actions = set(AuditEvent.objects.filter(after__node=busy).values_list("action", flat=True))
    assert {
        "node_policy.cordoned",
        "node_policy.evicted",
        "node_policy.verified",
        "node_policy.uncordoned",
    } <= actions
