"""The rollout driver makes no Kubernetes call while it holds the rollout's rows: slow I/O holds no
lock. Every request kubesim receives during a pass is checked from a second database session, at
the moment it arrives: the rollout's row and its pool's node rows must be free to lock (FOR UPDATE
NOWAIT). The test plays each node's agent itself (set the MIG label as the GPU Operator applier does,
report through the agent service) so that every call kubesim logs while a pass runs is the driver's.
"""

from __future__ import annotations

import secrets
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from django.db import connection
from django.utils import timezone
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from gpuplatform.audit.models import AuditEvent
from inventory.models import Node, NodePool
from inventory.services import create_cluster
from inventory.sync.service import sync_cluster
from kubesim.request_log import LoggedRequest, RequestLog
from policies.models import NodeAgent, NodePolicyState, Rollout, RolloutState
from policies.node_states import NodeState
from policies.services.delivery import report_status
from policies.services.rollouts import MIG_CONFIG, MIG_CONFIG_STATE, advance_rollout, start_rollout
from tests.policies_agents.conftest import wait_for
from tests.policies_agents.factories import bundle, revision

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

H100 = "NVIDIA-H100-80GB-HBM3"


class LockProbe(RequestLog):
    """kubesim's request log, asking at each request whether the pool's rollout rows are locked."""

    def __init__(self, pool_id: uuid.UUID) -> None:
        super().__init__()
        db = connection.settings_dict
        self.session = psycopg.connect(
            host=db["HOST"] or "127.0.0.1",
            port=db["PORT"] or 5432,
            user=db["USER"],
            dbname=db["NAME"],
            autocommit=True,
        )
        self.pool_id = pool_id
        self.during_pass = False
        self.calls: list[tuple[LoggedRequest, bool]] = []  # (request, rows locked when it arrived)
        self._asking = threading.Lock()

    def record(self, entry: LoggedRequest) -> None:
        super().record(entry)
        if self.during_pass:
            with self._asking:
                self.calls.append((entry, self._rows_locked()))

    def _rows_locked(self) -> bool:
        rollouts, states, nodes = (m._meta.db_table for m in (Rollout, NodePolicyState, Node))
        try:
            with self.session.transaction(), self.session.cursor() as cursor:
                cursor.execute(
                    f"SELECT 1 FROM {rollouts} WHERE pool_id = %s FOR UPDATE NOWAIT", [self.pool_id]
                )
                cursor.execute(
                    f"SELECT 1 FROM {states} s JOIN {nodes} n ON n.id = s.node_id"
                    " WHERE n.pool_id = %s FOR UPDATE OF s NOWAIT",
                    [self.pool_id],
                )
        except psycopg.errors.LockNotAvailable:
            return True
        return False

    @contextmanager
    def watching(self) -> Iterator[None]:
        self.during_pass = True
        try:
            yield
        finally:
            self.during_pass = False


@pytest.fixture
def fleet(cast, kubesim_factory, settings) -> Iterator[dict[str, Any]]:
    settings.POLICY_RETRY_BASE_SECONDS = 0
    sim = kubesim_factory(scenario="exclusive", nodes=4, seed=3, controllers=True)
    core = k8s.CoreV1Api(sim.api_client())
    for pod in core.list_pod_for_all_namespaces().items:  # empty GPU nodes; the busy one is made below
        if pod.metadata.namespace.startswith(("team-", "sandbox-")):
            try:
                core.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0)
            except ApiException as exc:
                if exc.status != 404:
                    raise
    cluster = create_cluster(actor=cast.pat, name="sim", kubeconfig=sim.kubeconfig_path.read_text())
    sync_cluster(cluster_id=cluster.pk)
    pool = NodePool.objects.get(cluster=cluster, name=H100)
    probe = LockProbe(pool.pk)
    sim.api.request_log = probe
    yield {"sim": sim, "core": core, "pool": pool, "nodes": sorted(pool.nodes.values_list("name", flat=True))}
    probe.session.close()


def busy_with_a_protected_pod(sim: Any, core: k8s.CoreV1Api, node: str) -> None:
    core.create_namespaced_pod(
        "team-vision",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "training-0", "namespace": "team-vision", "labels": {"app": "training"}},
            "spec": {
                "nodeName": node,
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {"name": "main", "image": "trainer:1", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
                ],
            },
        },
    )
    k8s.PolicyV1Api(sim.api_client()).create_namespaced_pod_disruption_budget(
        "team-vision",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "training", "namespace": "team-vision"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "training"}}},
        },
    )


class Agents:
    """Each node's agent, played by the test: on a delivery, set the node's MIG label (kubesim's
    mig-manager applies it) and report the bundle applied with MIG mode on every GPU."""

    def __init__(self, core: k8s.CoreV1Api, pool: NodePool) -> None:
        self.core = core
        self.agents = {
            node.name: NodeAgent.objects.create(
                cluster=node.cluster,
                node=node,
                credential_hash=secrets.token_hex(32),
                rotate_after=timezone.now() + timedelta(days=1),
            )
            for node in pool.nodes.all()
        }
        self.applied: set[str] = set()

    def poll(self, revision: Any) -> None:
        delivered = NodePolicyState.objects.filter(
            node__name__in=self.agents, desired_revision=revision, state=NodeState.PENDING
        ).values_list("node__name", flat=True)
        for node in sorted(set(delivered) - self.applied):
            labels = {MIG_CONFIG: revision.bundle["labels"][MIG_CONFIG], MIG_CONFIG_STATE: "pending"}
            self.core.patch_node(node, {"metadata": {"labels": labels}})
            report_status(
                agent=self.agents[node],
                revision=revision.number,
                content_hash=revision.content_hash,
                state="applied",
                gpus=[{"index": i, "mig_mode": True} for i in range(8)],
            )
            self.applied.add(node)


def test_no_kubernetes_call_is_made_while_the_rollouts_rows_are_locked(cast, fleet):
    # given: a pool whose first node runs a GPU pod that a disruption budget protects
    sim, core, pool, probe = fleet["sim"], fleet["core"], fleet["pool"], fleet["sim"].api.request_log
    busy = fleet["nodes"][0]
    busy_with_a_protected_pod(sim, core, busy)
    agents = Agents(core, pool)
    body = bundle("all-balanced")
    body["labels"]["nvidia.com/mig.strategy"] = "mixed"
    target = revision(pool, body, needs_drain=True)
    rollout = start_rollout(
        actor=cast.pat, pool_id=pool.pk, revision_id=target.pk, max_unavailable=1, approve_drain=True
    )

    def drive() -> None:
        with probe.watching():
            advance_rollout(rollout_id=rollout.pk)
        agents.poll(target)

    # when: the driver cordons the busy node and is refused the eviction, the budget goes, and it
    # drains, delivers, verifies and uncordons node after node
    refused = wait_for(
        lambda: NodePolicyState.objects.filter(
            node__name=busy,
            state=NodeState.BLOCKED,
            last_message__contains="refused by a PodDisruptionBudget",
        ).first(),
        seconds=60,
        step=drive,
    )
    assert refused is not None and core.read_node(busy).spec.unschedulable is True
    k8s.PolicyV1Api(sim.api_client()).delete_namespaced_pod_disruption_budget("training", "team-vision")
    wait_for(
        lambda: Rollout.objects.get(pk=rollout.pk).state != RolloutState.RUNNING,
        seconds=120,
        step=drive,
        why=lambda: str(list(NodePolicyState.objects.values_list("node__name", "state", "last_message"))),
    )

    # then: the rollout converged as it always did...
    assert Rollout.objects.get(pk=rollout.pk).state == RolloutState.SUCCEEDED
    rows = NodePolicyState.objects.filter(node__pool=pool)
    assert {(r.state, r.applied_hash, r.verified, r.cordoned_by_rollout) for r in rows} == {
        (NodeState.APPLIED, target.content_hash, True, False)
    }
    assert not core.read_node(busy).spec.unschedulable
    actions = set(AuditEvent.objects.filter(after__node=busy).values_list("action", flat=True))
    assert {"node_policy.cordoned", "node_policy.evicted", "node_policy.uncordoned"} <= actions
    # ...it listed pods, cordoned, evicted, read labels and uncordoned...
    made = {(call.verb, call.resource, call.subresource) for call, _ in probe.calls}
    assert {
        ("list", "pods", ""),
        ("patch", "nodes", ""),
        ("create", "pods", "eviction"),
        ("get", "nodes", ""),
    } <= made
    # ...and not one of those calls arrived while the rollout's rows were locked
    assert [call for call, locked in probe.calls if locked] == []
