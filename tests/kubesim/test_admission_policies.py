"""ValidatingAdmissionPolicies evaluated on writes, through the official client, as the API server does.

Reference: https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/ (a
denial reads `<resource> "<name>" is forbidden: ValidatingAdmissionPolicy '<p>' with binding '<b>'
denied request: <message>`, code 422 with reason Invalid unless the validation names another reason).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client

from tests.kubesim.helpers import configmap, raw_call, status_of

GPU = "nvidia.com/gpu"


def gpu_pod(
    name: str, gpus: int, *, namespace: str = "default", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    limits = {GPU: str(gpus)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {
            "containers": [
                {"name": "main", "image": "cuda:12", "resources": {"limits": limits, "requests": limits}}
            ]
        },
    }


GPUS_OF_POD = (
    "object.spec.containers.map(c, has(c.resources.limits) && '" + GPU + "' in c.resources.limits ? "
    "int(c.resources.limits['" + GPU + "']) : 0).sum()"
)


def policy(name: str, validations: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    constraints = spec.pop(
        "matchConstraints",
        {
            "resourceRules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["pods"],
                }
            ]
        },
    )
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {"matchConstraints": constraints, "validations": validations, **spec},
    }


def binding(name: str, policy_name: str, actions: list[str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": policy_name, "validationActions": actions or ["Deny"], **spec},
    }


@pytest.fixture
def admission(kube_api_client) -> client.AdmissionregistrationV1Api:
    return client.AdmissionregistrationV1Api(kube_api_client)


@pytest.fixture
def core(kube_api_client) -> client.CoreV1Api:
    return client.CoreV1Api(kube_api_client)


def install(
    admission: client.AdmissionregistrationV1Api, pol: dict[str, Any], *bindings: dict[str, Any]
) -> None:
    admission.create_validating_admission_policy(pol)
    for b in bindings:
        admission.create_validating_admission_policy_binding(b)


def test_a_pod_breaking_a_policy_is_refused_and_one_keeping_it_admitted(admission, core, kubesim):
    install(
        admission,
        policy("max-gpus", [{"expression": GPUS_OF_POD + " <= 2", "message": "at most 2 GPUs per pod"}]),
        binding("max-gpus", "max-gpus"),
    )

    core.create_namespaced_pod("default", gpu_pod("small", 2))
    with pytest.raises(client.ApiException) as refused:
        core.create_namespaced_pod("default", gpu_pod("big", 3))

    text = (
        "ValidatingAdmissionPolicy 'max-gpus' with binding 'max-gpus' denied request: at most 2 GPUs per pod"
    )
    assert refused.value.status == 422
    assert status_of(refused.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'pods "big" is forbidden: {text}',
        "reason": "Invalid",
        "details": {"name": "big", "kind": "pods", "causes": [{"message": text}]},
        "code": 422,
    }
    assert kubesim.store.get("pods", "default", "small") is not None
    assert kubesim.store.get("pods", "default", "big") is None


def test_params_come_from_a_config_map_in_the_request_namespace(admission, core):
    """paramRef without a namespace reads the param in the namespace of the request."""
    install(
        admission,
        policy(
            "tenant-max",
            [
                {
                    "expression": GPUS_OF_POD + " <= int(params.data.maxGpusPerPod)",
                    "messageExpression": "'pods in ' + request.namespace + ' may use at most ' "
                    "+ params.data.maxGpusPerPod + ' GPUs'",
                }
            ],
            paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
        ),
        binding(
            "tenant-max",
            "tenant-max",
            paramRef={"name": "gpu-rules", "parameterNotFoundAction": "Deny"},
        ),
    )
    for ns, limit in (("team-a", "1"), ("team-b", "4")):
        core.create_namespace({"metadata": {"name": ns}})
        core.create_namespaced_config_map(ns, configmap("gpu-rules", {"maxGpusPerPod": limit}, ns))
    core.create_namespace({"metadata": {"name": "team-c"}})  # no param there

    core.create_namespaced_pod("team-b", gpu_pod("p", 3, namespace="team-b"))
    with pytest.raises(client.ApiException) as over:
        core.create_namespaced_pod("team-a", gpu_pod("p", 3, namespace="team-a"))
    with pytest.raises(client.ApiException) as no_param:
        core.create_namespaced_pod("team-c", gpu_pod("p", 1, namespace="team-c"))

    assert status_of(over.value)["message"].endswith("denied request: pods in team-a may use at most 1 GPUs")
    assert status_of(no_param.value)["message"] == (
        "pods \"p\" is forbidden: ValidatingAdmissionPolicy 'tenant-max' with binding 'tenant-max' denied "
        "request: failed to configure binding: no params found for policy binding with `Deny` "
        "parameterNotFoundAction"
    )


def test_params_by_selector_must_all_pass_and_allow_skips_when_none_match(admission, core, kubesim):
    install(
        admission,
        policy(
            "banned-images",
            [{"expression": "object.spec.containers.all(c, !c.image.startsWith(params.data.prefix))"}],
            paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
        ),
        binding(
            "banned-images",
            "banned-images",
            paramRef={
                "namespace": "kube-system",
                "selector": {"matchLabels": {"rule": "banned-image"}},
                "parameterNotFoundAction": "Allow",
            },
        ),
    )
    core.create_namespaced_pod("default", gpu_pod("before", 1))  # no params yet: Allow admits
    for name, prefix in (("no-latest", "latest/"), ("no-cuda", "cuda:")):
        cm = configmap(name, {"prefix": prefix}, "kube-system")
        cm["metadata"]["labels"] = {"rule": "banned-image"}
        core.create_namespaced_config_map("kube-system", cm)

    with pytest.raises(client.ApiException) as refused:
        core.create_namespaced_pod("default", gpu_pod("after", 1))

    assert kubesim.store.get("pods", "default", "before") is not None
    assert status_of(refused.value)["message"].endswith(
        "denied request: failed expression: "
        "object.spec.containers.all(c, !c.image.startsWith(params.data.prefix))"
    )


def test_namespace_object_and_namespace_selector(admission, core):
    """Only tenant namespaces are judged; a tenant's pods must carry its pool label."""
    install(
        admission,
        policy(
            "pool-of-tenant",
            [
                {
                    "expression": "has(object.metadata.labels) && 'pool' in object.metadata.labels && "
                    "object.metadata.labels['pool'] == "
                    "namespaceObject.metadata.labels['gpuplatform.io/pool']",
                    "messageExpression": "'pods of ' + namespaceObject.metadata.name + ' run on pool ' + "
                    "namespaceObject.metadata.labels['gpuplatform.io/pool']",
                    "reason": "Forbidden",
                }
            ],
            matchConstraints={
                "namespaceSelector": {
                    "matchExpressions": [{"key": "gpuplatform.io/pool", "operator": "Exists"}]
                },
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["pods"],
                    }
                ],
            },
        ),
        binding("pool-of-tenant", "pool-of-tenant"),
    )
    core.create_namespace({"metadata": {"name": "vision", "labels": {"gpuplatform.io/pool": "h100"}}})

    core.create_namespaced_pod("default", gpu_pod("free", 1))  # not a tenant namespace
    core.create_namespaced_pod("vision", gpu_pod("ok", 1, namespace="vision", labels={"pool": "h100"}))
    with pytest.raises(client.ApiException) as refused:
        core.create_namespaced_pod("vision", gpu_pod("wrong", 1, namespace="vision", labels={"pool": "a100"}))

    assert refused.value.status == 403 and status_of(refused.value)["reason"] == "Forbidden"
    assert status_of(refused.value)["message"].endswith("denied request: pods of vision run on pool h100")


def test_old_object_on_update_through_merge_patch_and_server_side_apply(admission, core, kube_api_client):
    install(
        admission,
        policy(
            "pool-immutable",
            [
                {
                    "expression": "oldObject == null || "
                    "object.metadata.labels['pool'] == oldObject.metadata.labels['pool']",
                    "message": "the pool label cannot change",
                }
            ],
            matchConstraints={
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["configmaps"],
                    }
                ]
            },
        ),
        binding("pool-immutable", "pool-immutable"),
    )
    cm = configmap("flavors", {"a": "1"})
    cm["metadata"]["labels"] = {"pool": "h100"}
    core.create_namespaced_config_map("default", cm)

    core.patch_namespaced_config_map("flavors", "default", {"data": {"a": "2"}})  # pool unchanged: fine
    with pytest.raises(client.ApiException) as patched:
        core.patch_namespaced_config_map("flavors", "default", {"metadata": {"labels": {"pool": "a100"}}})
    applied = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "flavors", "namespace": "default", "labels": {"pool": "a100"}},
    }
    code, body, _ = raw_call(
        kube_api_client,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/flavors",
        json.dumps(applied),
        content_type="application/apply-patch+yaml",
        query={"fieldManager": "platform", "force": "true"},
    )

    assert patched.value.status == 422
    assert status_of(patched.value)["message"].endswith("denied request: the pool label cannot change")
    assert code == 422 and body["message"].endswith("the pool label cannot change")
    assert core.read_namespaced_config_map("flavors", "default").metadata.labels == {"pool": "h100"}


def test_failure_policy_decides_what_an_evaluation_error_does(admission, core, kubesim):
    broken = [{"expression": "object.spec.priorityClassName == 'gpu-high'"}]  # unset field: no such key
    install(admission, policy("strict", broken, failurePolicy="Fail"), binding("strict", "strict"))
    with pytest.raises(client.ApiException) as refused:
        core.create_namespaced_pod("default", gpu_pod("p", 1))
    admission.patch_validating_admission_policy("strict", {"spec": {"failurePolicy": "Ignore"}})
    core.create_namespaced_pod("default", gpu_pod("p", 1))

    assert status_of(refused.value)["message"].endswith(
        "denied request: expression 'object.spec.priorityClassName == 'gpu-high'' resulted in error: "
        "no such key: priorityClassName"
    )
    assert kubesim.store.get("pods", "default", "p") is not None


def test_warn_and_audit_actions_admit_and_report(admission, core, kube_api_client, kubesim):
    install(
        admission,
        policy(
            "prefer-small",
            [
                {
                    "expression": GPUS_OF_POD + " <= 1",
                    "messageExpression": "'asks for ' + string(" + GPUS_OF_POD + ") + ' GPUs'",
                }
            ],
            auditAnnotations=[{"key": "gpus", "valueExpression": "string(" + GPUS_OF_POD + ")"}],
        ),
        binding("prefer-small", "prefer-small", ["Warn", "Audit"]),
    )

    code, _, headers = raw_call(kube_api_client, "POST", "/api/v1/namespaces/default/pods", gpu_pod("p", 4))
    audit = raw_call(kube_api_client, "GET", "/kubesim/audit")[1]["events"]

    assert code == 201
    assert headers["Warning"] == (
        "299 - \"Validation failed for ValidatingAdmissionPolicy 'prefer-small' with binding 'prefer-small': "
        'asks for 4 GPUs"'
    )
    failure = [
        e for e in audit if "validation.policy.admission.k8s.io/validation_failure" in e["annotations"]
    ]
    assert json.loads(failure[0]["annotations"]["validation.policy.admission.k8s.io/validation_failure"]) == [
        {
            "message": "asks for 4 GPUs",
            "policy": "prefer-small",
            "binding": "prefer-small",
            "expressionIndex": 0,
            "validationActions": ["Warn", "Audit"],
        }
    ]
    assert {"prefer-small/gpus": "4"} in [e["annotations"] for e in audit]


def test_match_conditions_variables_and_binding_match_resources(admission, core, kubesim):
    """A variable holds the count, which matchConditions (that skip non-GPU pods) and validations use;
    the binding narrows to labelled namespaces."""
    install(
        admission,
        policy(
            "gpu-pods-labelled",
            [
                {
                    "expression": "variables.gpus == 0 || "
                    "(has(object.metadata.labels) && 'team' in object.metadata.labels)",
                    "message": "GPU pods need a team label",
                }
            ],
            matchConditions=[{"name": "asks-for-gpus", "expression": "variables.gpus > 0"}],
            variables=[{"name": "gpus", "expression": GPUS_OF_POD}],
        ),
        binding(
            "gpu-pods-labelled",
            "gpu-pods-labelled",
            matchResources={"namespaceSelector": {"matchLabels": {"gpuplatform.io/tenant": "true"}}},
        ),
    )
    core.create_namespace({"metadata": {"name": "nlp", "labels": {"gpuplatform.io/tenant": "true"}}})

    core.create_namespaced_pod("default", gpu_pod("outside", 1))  # namespace not bound
    cpu = gpu_pod("cpu", 0, namespace="nlp")
    cpu["spec"]["containers"][0]["resources"] = {}
    core.create_namespaced_pod("nlp", cpu)  # the match condition is false
    core.create_namespaced_pod("nlp", gpu_pod("labelled", 1, namespace="nlp", labels={"team": "nlp"}))
    with pytest.raises(client.ApiException) as refused:
        core.create_namespaced_pod("nlp", gpu_pod("bare", 1, namespace="nlp"))

    assert status_of(refused.value)["message"].endswith("denied request: GPU pods need a team label")
    assert [p["metadata"]["name"] for p in kubesim.store.list("pods", "nlp")] == ["cpu", "labelled"]


def test_dry_run_is_judged_too_and_policies_do_not_judge_their_own_kinds(admission, core, kube_api_client):
    everything = {
        "resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}]
    }
    install(
        admission,
        policy(
            "nothing-goes",
            [{"expression": "request.dryRun", "message": "only dry runs"}],
            matchConstraints=everything,
        ),
        binding("nothing-goes", "nothing-goes"),
    )

    core.create_namespaced_pod("default", gpu_pod("p", 1), dry_run="All")  # request.dryRun is true
    with pytest.raises(client.ApiException) as refused:
        core.create_namespaced_config_map("default", configmap("c"))
    admission.delete_validating_admission_policy_binding("nothing-goes")  # exempt: not locked out
    core.create_namespaced_config_map("default", configmap("c"))

    assert status_of(refused.value)["message"].endswith("denied request: only dry runs")


def test_policies_and_bindings_are_validated_beyond_the_schema(admission):
    with pytest.raises(client.ApiException) as bad_cel:
        admission.create_validating_admission_policy(policy("bad", [{"expression": "object.spec.("}]))
    with pytest.raises(client.ApiException) as deny_and_warn:
        admission.create_validating_admission_policy_binding(binding("b", "p", ["Deny", "Warn"]))
    with pytest.raises(client.ApiException) as no_param_action:
        admission.create_validating_admission_policy_binding(binding("b", "p", paramRef={"name": "x"}))

    [compile_cause] = status_of(bad_cel.value)["details"]["causes"]
    assert bad_cel.value.status == 422 and compile_cause["field"] == "spec.validations[0].expression"
    assert "compilation failed" in compile_cause["message"]
    assert status_of(deny_and_warn.value)["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: ["Deny", "Warn"]: must not contain both Deny and Warn (repeating the '
            "same validation failure information in the API response and headers serves no purpose)",
            "field": "spec.validationActions",
        }
    ]
    assert [c["field"] for c in status_of(no_param_action.value)["details"]["causes"]] == [
        "spec.paramRef.parameterNotFoundAction"
    ]


def test_a_generate_name_create_has_an_empty_request_name(admission, core):
    install(
        admission,
        policy("named", [{"expression": "request.name != ''", "message": "name your pods"}]),
        binding("named", "named"),
    )
    generated = gpu_pod("", 1)
    generated["metadata"] = {"generateName": "job-", "namespace": "default"}

    core.create_namespaced_pod("default", gpu_pod("explicit", 1))
    with pytest.raises(client.ApiException) as refused:
        core.create_namespaced_pod("default", generated)

    message = status_of(refused.value)["message"]
    assert message.startswith('pods "job-') and message.endswith("denied request: name your pods")
