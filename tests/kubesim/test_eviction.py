"""pods/eviction with PodDisruptionBudgets through the official client, as the API server answers it.

Reference: https://kubernetes.io/docs/concepts/scheduling-eviction/api-eviction/ and
pkg/registry/core/pod/storage/eviction.go; the budget's status is the disruption controller's
(pkg/controller/disruption), which kubesim runs as the `disruption` controller.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from kubesim.controllers import ControllerSet, start_controllers
from tests.kubesim.helpers import pod, raw_call, status_of


def running(core: client.CoreV1Api, name: str, *, node: str = "gpu-1", ready: bool = True) -> None:
    """A bound pod the kubelet reports Running (Ready or not)."""
    core.create_namespaced_pod("default", pod(name, labels={"app": "train"}, node=node))
    condition = {"type": "Ready", "status": "True" if ready else "False"}
    core.patch_namespaced_pod_status(
        name, "default", {"status": {"phase": "Running", "conditions": [condition]}}
    )


def budget(name: str = "train", **spec: object) -> dict[str, object]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "train"}}, **spec},
    }


def eviction(name: str, **delete_options: object) -> client.V1Eviction:
    return client.V1Eviction(
        metadata=client.V1ObjectMeta(name=name, namespace="default"),
        delete_options=client.V1DeleteOptions(**delete_options) if delete_options else None,
    )


@pytest.fixture
def controllers(kubesim) -> Iterator[ControllerSet]:
    controller_set = start_controllers(kubesim.store, enabled={"disruption"}, background=False)
    yield controller_set
    controller_set.stop()


def pdb_status(policy: client.PolicyV1Api, name: str = "train") -> client.V1PodDisruptionBudgetStatus:
    status = policy.read_namespaced_pod_disruption_budget_status(name, "default").status
    assert status is not None
    return status


def test_evicting_a_pod_without_a_budget_deletes_it_and_answers_201_success(kube_api_client, kubesim):
    core = client.CoreV1Api(kube_api_client)
    running(core, "p1")

    code, body, _ = raw_call(
        kube_api_client,
        "POST",
        "/api/v1/namespaces/default/pods/p1/eviction",
        {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p1", "namespace": "default"}},
    )

    assert code == 201
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
    assert kubesim.store.get("pods", "default", "p1") is None


def test_a_budget_allows_disruptions_down_to_min_available_then_answers_429(
    kube_api_client, kubesim, controllers
):
    core, policy = client.CoreV1Api(kube_api_client), client.PolicyV1Api(kube_api_client)
    for name in ("p1", "p2", "p3"):
        running(core, name)
    policy.create_namespaced_pod_disruption_budget("default", budget(minAvailable=2))
    controllers.settle()

    before = pdb_status(policy)
    # 3 ready pods, 2 must stay: one disruption allowed.
    assert (before.expected_pods, before.current_healthy, before.desired_healthy) == (3, 3, 2)
    assert before.disruptions_allowed == 1 and before.observed_generation == 1
    assert [(c.type, c.status, c.reason) for c in before.conditions] == [
        ("DisruptionAllowed", "True", "SufficientPods")
    ]

    core.create_namespaced_pod_eviction("p1", "default", eviction("p1"))
    spent = pdb_status(policy)
    with pytest.raises(client.ApiException) as refused:
        core.create_namespaced_pod_eviction("p2", "default", eviction("p2"))

    assert kubesim.store.get("pods", "default", "p1") is None
    # The eviction spent the disruption and recorded the pod before the controller saw it go.
    assert spent.disruptions_allowed == 0 and set(spent.disrupted_pods) == {"p1"}
    assert refused.value.status == 429 and "Retry-After" not in refused.value.headers
    # The handler spends disruptionsAllowed only; currentHealthy stays the controller's last count (3).
    assert status_of(refused.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Cannot evict pod as it would violate the pod's disruption budget.",
        "reason": "TooManyRequests",
        "details": {
            "causes": [
                {
                    "reason": "DisruptionBudget",
                    "message": "The disruption budget train needs 2 healthy pods and has 3 currently",
                }
            ]
        },
        "code": 429,
    }
    assert kubesim.store.get("pods", "default", "p2") is not None

    controllers.settle()
    after = pdb_status(policy)
    assert (after.expected_pods, after.current_healthy, after.disruptions_allowed) == (2, 2, 0)
    assert after.disrupted_pods is None  # p1 is gone, so the controller dropped it
    assert after.conditions[0].reason == "InsufficientPods"


def test_max_unavailable_as_a_percentage_counts_only_managed_pods(kube_api_client, controllers):
    """Bare pods have no controller to give a scale: expectedPods 0, nothing may be disrupted."""
    core, policy = client.CoreV1Api(kube_api_client), client.PolicyV1Api(kube_api_client)
    running(core, "p1")
    running(core, "p2")
    policy.create_namespaced_pod_disruption_budget("default", budget(maxUnavailable="50%"))
    controllers.settle()

    status = pdb_status(policy)

    assert (status.expected_pods, status.current_healthy, status.desired_healthy) == (0, 2, 0)
    assert status.disruptions_allowed == 0


def test_a_budget_the_controller_has_not_processed_refuses_with_still_being_processed(kube_api_client):
    core, policy = client.CoreV1Api(kube_api_client), client.PolicyV1Api(kube_api_client)
    running(core, "p1")
    policy.create_namespaced_pod_disruption_budget("default", budget(minAvailable=0))

    with pytest.raises(client.ApiException) as refused:
        core.create_namespaced_pod_eviction("p1", "default", eviction("p1"))

    assert refused.value.status == 429
    assert status_of(refused.value)["details"]["causes"] == [
        {
            "reason": "DisruptionBudget",
            "message": "The disruption budget train is still being processed by the server.",
        }
    ]


def test_missing_pod_is_404_and_a_name_mismatch_400(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    running(core, "p1")

    with pytest.raises(client.ApiException) as missing:
        core.create_namespaced_pod_eviction("ghost", "default", eviction("ghost"))
    with pytest.raises(client.ApiException) as mismatch:
        core.create_namespaced_pod_eviction("p1", "default", eviction("other"))

    assert missing.value.status == 404
    assert status_of(missing.value)["message"] == 'pods "ghost" not found'
    assert mismatch.value.status == 400
    assert status_of(mismatch.value)["message"] == "name in URL does not match name in Eviction object"


def test_dry_run_eviction_changes_neither_pod_nor_budget(kube_api_client, kubesim, controllers):
    core, policy = client.CoreV1Api(kube_api_client), client.PolicyV1Api(kube_api_client)
    running(core, "p1")
    running(core, "p2")
    policy.create_namespaced_pod_disruption_budget("default", budget(minAvailable=1))
    controllers.settle()
    rv = kubesim.store.get("poddisruptionbudgets", "default", "train")["metadata"]["resourceVersion"]

    core.create_namespaced_pod_eviction("p1", "default", eviction("p1", dry_run=["All"]))
    core.create_namespaced_pod_eviction("p1", "default", eviction("p1"), dry_run="All")

    assert kubesim.store.get("pods", "default", "p1") is not None
    assert kubesim.store.get("poddisruptionbudgets", "default", "train")["metadata"]["resourceVersion"] == rv


def test_delete_options_preconditions_apply_to_the_deletion(kube_api_client, kubesim, controllers):
    core = client.CoreV1Api(kube_api_client)
    running(core, "p1")

    with pytest.raises(client.ApiException) as stale:
        core.create_namespaced_pod_eviction(
            "p1", "default", eviction("p1", preconditions=client.V1Preconditions(uid="not-the-uid"))
        )

    assert stale.value.status == 409
    assert kubesim.store.get("pods", "default", "p1") is not None


def test_pods_that_are_not_running_or_not_ready_are_evicted_without_spending_the_budget(
    kube_api_client, kubesim, controllers
):
    core, policy = client.CoreV1Api(kube_api_client), client.PolicyV1Api(kube_api_client)
    for name in ("ready-1", "ready-2"):
        running(core, name)
    running(core, "unready", ready=False)
    core.create_namespaced_pod("default", pod("pending", labels={"app": "train"}))
    policy.create_namespaced_pod_disruption_budget("default", budget(minAvailable=2))
    controllers.settle()
    assert pdb_status(policy).disruptions_allowed == 0  # 2 healthy, 2 needed

    core.create_namespaced_pod_eviction("pending", "default", eviction("pending"))
    # Unready, and the budget is healthy (2 >= 2 > 0): IfHealthyBudget lets it go.
    core.create_namespaced_pod_eviction("unready", "default", eviction("unready"))
    with pytest.raises(client.ApiException) as refused:
        core.create_namespaced_pod_eviction("ready-1", "default", eviction("ready-1"))

    assert kubesim.store.get("pods", "default", "pending") is None
    assert kubesim.store.get("pods", "default", "unready") is None
    assert refused.value.status == 429
    assert pdb_status(policy).disrupted_pods is None


def test_an_unready_pod_under_an_unhealthy_budget_needs_always_allow(kube_api_client, kubesim, controllers):
    core, policy = client.CoreV1Api(kube_api_client), client.PolicyV1Api(kube_api_client)
    running(core, "unready", ready=False)
    policy.create_namespaced_pod_disruption_budget("default", budget(minAvailable=1))
    controllers.settle()

    with pytest.raises(client.ApiException) as refused:
        core.create_namespaced_pod_eviction("unready", "default", eviction("unready"))
    policy.patch_namespaced_pod_disruption_budget(
        "train", "default", {"spec": {"unhealthyPodEvictionPolicy": "AlwaysAllow"}}
    )
    controllers.settle()
    core.create_namespaced_pod_eviction("unready", "default", eviction("unready"))

    assert refused.value.status == 429
    assert kubesim.store.get("pods", "default", "unready") is None


def test_two_budgets_over_one_pod_are_a_500(kube_api_client, controllers):
    core, policy = client.CoreV1Api(kube_api_client), client.PolicyV1Api(kube_api_client)
    running(core, "p1")
    policy.create_namespaced_pod_disruption_budget("default", budget("a", minAvailable=0))
    policy.create_namespaced_pod_disruption_budget("default", budget("b", maxUnavailable=1))
    controllers.settle()

    with pytest.raises(client.ApiException) as refused:
        core.create_namespaced_pod_eviction("p1", "default", eviction("p1"))

    assert refused.value.status == 500
    assert status_of(refused.value)["message"] == (
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    )


def test_budgets_are_served_listed_watched_and_validated(kube_api_client):
    policy = client.PolicyV1Api(kube_api_client)
    created = policy.create_namespaced_pod_disruption_budget("default", budget(minAvailable="50%"))

    listed = policy.list_pod_disruption_budget_for_all_namespaces()
    with pytest.raises(client.ApiException) as both:
        policy.create_namespaced_pod_disruption_budget(
            "default", budget("x", minAvailable=1, maxUnavailable=1)
        )
    resources = {r.name: r for r in client.CoreV1Api(kube_api_client).get_api_resources().resources}

    assert created.metadata.generation == 1 and created.status.observed_generation is None
    assert (created.status.disruptions_allowed, created.status.expected_pods) == (0, 0)
    assert [p.metadata.name for p in listed.items] == ["train"]
    assert both.value.status == 422
    assert status_of(both.value)["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "minAvailable and maxUnavailable cannot be both set",
            "field": "spec",
        }
    ]
    evict = resources["pods/eviction"]
    assert (evict.group, evict.version, evict.kind, evict.verbs) == ("policy", "v1", "Eviction", ["create"])


def test_an_eviction_grace_period_terminates_the_pod_through_the_kubelet(kube_api_client, kubesim):
    """gracePeriodSeconds > 0 on a bound pod: Terminating (deletionTimestamp now + grace) until the
    kubelet (pod-lifecycle) sees its containers stop and deletes it with grace 0."""
    now = [1000.0]
    controllers = start_controllers(
        kubesim.store, enabled={"pod-lifecycle", "disruption"}, background=False, clock=lambda: now[0]
    )
    try:
        core, policy = client.CoreV1Api(kube_api_client), client.PolicyV1Api(kube_api_client)
        for name in ("p1", "p2"):
            running(core, name)
        core.patch_namespaced_pod(
            "p1",
            "default",
            {"metadata": {"annotations": {"kubesim.gpuplatform.io/termination-seconds": "10"}}},
        )
        core.create_namespaced_pod("default", pod("unbound", labels={"app": "train"}))
        policy.create_namespaced_pod_disruption_budget("default", budget(minAvailable=0))
        controllers.settle()

        core.create_namespaced_pod_eviction("p1", "default", eviction("p1", grace_period_seconds=30))
        core.delete_namespaced_pod("unbound", "default", grace_period_seconds=30)
        terminating = core.read_namespaced_pod("p1", "default")
        controllers.settle()
        still = kubesim.store.get("pods", "default", "p1")
        healthy = pdb_status(policy).current_healthy
        now[0] += 10
        controllers.settle()
    finally:
        controllers.stop()

    assert terminating.metadata.deletion_grace_period_seconds == 30
    assert terminating.metadata.deletion_timestamp is not None
    assert kubesim.store.get("pods", "default", "unbound") is None  # no kubelet to wait for
    assert still is not None and healthy == 1  # terminating pods are not healthy
    assert kubesim.store.get("pods", "default", "p1") is None
