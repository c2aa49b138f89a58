"""The chart's ValidatingAdmissionPolicy for the node agent, evaluated with cel-python (the CEL core
language the API server's cel-go also implements) on the requests an agent could send: it may set its
own policy labels on the node it runs on, and nothing else; and the same policy installed in kubesim,
which evaluates it as the API server does, refusing the agent's own pod-bound token on another node."""

from __future__ import annotations

from typing import Any

import celpy
import pytest
from celpy import celtypes, json_to_cel

from tests.deploy.chart import EXAMPLES, by_kind, render, values_of

AGENT = "system:serviceaccount:gpuplatform:gpuplatform-agent"
BASE = {
    "kubernetes.io/hostname": "gpu-1",
    "nvidia.com/gpu.present": "true",
    "nvidia.com/mig.config": "all-disabled",
}


@pytest.fixture(scope="module")
def policy() -> dict[str, Any]:
    objects = render(values_of(next(p for p in EXAMPLES if p.stem == "values-single-cluster")))
    (found,) = by_kind(objects, "ValidatingAdmissionPolicy")
    return found["spec"]


def node(name: str, labels: dict[str, str] | None, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if labels is not None:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "Node", "metadata": metadata, "spec": spec or {}}


def admit(policy, old, new, *, user=AGENT, node_name="gpu-1") -> list[str]:
    """The messages of the validations that fail; [] when admitted; ["not matched"] when the policy
    does not apply to this user."""
    env = celpy.Environment()

    def run(expression: str, activation: dict[str, Any]) -> Any:
        return env.program(env.compile(expression)).evaluate(activation)

    extra = {"authentication.kubernetes.io/node-name": [node_name]} if node_name else {}
    request = {"userInfo": {"username": user, "extra": extra}, "operation": "UPDATE"}
    activation: dict[str, Any] = {
        "object": json_to_cel(new),
        "oldObject": json_to_cel(old),
        "request": json_to_cel(request),
    }
    if not all(run(c["expression"], activation) for c in policy["matchConditions"]):
        return ["not matched"]
    variables: dict[Any, Any] = {}
    for variable in policy["variables"]:
        activation["variables"] = celtypes.MapType(variables)
        variables[celtypes.StringType(variable["name"])] = run(variable["expression"], activation)
    activation["variables"] = celtypes.MapType(variables)
    return [v["message"] for v in policy["validations"] if not run(v["expression"], activation)]


def test_the_agent_sets_its_policy_labels_on_its_own_node(policy):
    new = {
        **BASE,
        "nvidia.com/mig.config": "gpuplatform-r12",
        "nvidia.com/device-plugin.config": "gpuplatform-r12",
    }
    assert admit(policy, node("gpu-1", BASE), node("gpu-1", new)) == []
    assert admit(policy, node("gpu-1", new), node("gpu-1", BASE | {"nvidia.com/mig.config": "x"})) == []


@pytest.mark.parametrize(
    ("case", "old", "new", "node_name", "refusal"),
    [
        (
            "another node",
            node("gpu-2", BASE),
            node("gpu-2", BASE | {"nvidia.com/mig.config": "x"}),
            "gpu-1",
            "only the node it runs on",
        ),
        (
            "a token with no node",
            node("gpu-1", BASE),
            node("gpu-1", BASE | {"nvidia.com/mig.config": "x"}),
            "",
            "only the node it runs on",
        ),
        (
            "a label not its own",
            node("gpu-1", BASE),
            node("gpu-1", BASE | {"node-role.kubernetes.io/gpu": ""}),
            "gpu-1",
            "only its own labels",
        ),
        (
            "a label removed that is not its own",
            node("gpu-1", BASE),
            node("gpu-1", {"nvidia.com/mig.config": "x"}),
            "gpu-1",
            "only its own labels",
        ),
        ("every label removed", node("gpu-1", BASE), node("gpu-1", None), "gpu-1", "only its own labels"),
        ("a cordon", node("gpu-1", BASE), node("gpu-1", BASE, {"unschedulable": True}), "gpu-1", "spec"),
    ],
)
def test_anything_else_is_refused(policy, case, old, new, node_name, refusal):
    refused = admit(policy, old, new, node_name=node_name)
    assert any(refusal in message for message in refused), (case, refused)


def test_other_identities_are_not_this_policys_business(policy):
    other = "system:serviceaccount:gpuplatform:gpuplatform-sync"
    assert admit(policy, node("gpu-2", BASE), node("gpu-2", None), user=other) == ["not matched"]


def test_kubesim_itself_refuses_the_agents_token_on_another_node_and_admits_its_own(kubesim_factory):
    # The chart's rendered policy and binding installed in kubesim, which evaluates them as the API
    # server does, with the userInfo a pod-bound service-account token carries (its node's name in
    # the authentication.kubernetes.io/node-name extra).
    from kubernetes import client as k8s

    objects = render(values_of(next(p for p in EXAMPLES if p.stem == "values-single-cluster")))
    sim = kubesim_factory(scenario="mixed", nodes=4, seed=1)
    admin: Any = k8s.AdmissionregistrationV1Api(sim.api_client())  # plain dicts for bodies
    admin.create_validating_admission_policy(by_kind(objects, "ValidatingAdmissionPolicy")[0])
    admin.create_validating_admission_policy_binding(by_kind(objects, "ValidatingAdmissionPolicyBinding")[0])
    core: Any = k8s.CoreV1Api(sim.api_client())
    own, other = (n.metadata.name for n in core.list_node().items[:2])
    core.create_namespace({"metadata": {"name": "gpuplatform"}})
    core.create_namespaced_pod(
        "gpuplatform",
        {
            "metadata": {"name": "gpuplatform-agent-x1"},
            "spec": {
                "serviceAccountName": "gpuplatform-agent",
                "nodeName": own,
                "containers": [{"name": "agent", "image": "gpuplatform:1"}],
            },
        },
    )
    token = sim.service_account_token(
        namespace="gpuplatform", name="gpuplatform-agent", pod="gpuplatform-agent-x1"
    )
    agent: Any = k8s.CoreV1Api(sim.api_client(token))
    label = {"metadata": {"labels": {"nvidia.com/mig.config": "gpuplatform-r3"}}}

    with pytest.raises(k8s.ApiException) as refused:
        agent.patch_node(other, label)
    assert refused.value.status == 403  # the validations' reason: Forbidden, as NodeRestriction answers
    assert "the node agent may change only the node it runs on" in str(refused.value.body)
    assert (core.read_node(other).metadata.labels or {}).get("nvidia.com/mig.config") != "gpuplatform-r3"

    agent.patch_node(own, label)
    assert core.read_node(own).metadata.labels["nvidia.com/mig.config"] == "gpuplatform-r3"
    # the same write with the kubeconfig's administrator is not this policy's business
    core.patch_node(other, label)
    assert core.read_node(other).metadata.labels["nvidia.com/mig.config"] == "gpuplatform-r3"
