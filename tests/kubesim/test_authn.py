"""kubesim presents a pod-bound service-account token to admission as the API server's token
authenticator does (request.userInfo): the account's username, its three groups, its uid, and the
pod and node it is bound to in the extra; an unknown token is 401."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client as k8s

from kubesim.errors import ApiError

EXTRA = "authentication.kubernetes.io/"


def test_a_pod_bound_token_is_the_service_account_on_its_node(kubesim_factory):
    sim = kubesim_factory(scenario="mixed", nodes=2, seed=1)
    admin: Any = k8s.AdmissionregistrationV1Api(sim.api_client())
    core: Any = k8s.CoreV1Api(sim.api_client())
    node = core.list_node().items[0]
    core.create_namespace({"metadata": {"name": "ops"}})
    pod = core.create_namespaced_pod(
        "ops",
        {
            "metadata": {"name": "runner"},
            "spec": {
                "serviceAccountName": "robot",
                "nodeName": node.metadata.name,
                "containers": [{"name": "c", "image": "i"}],
            },
        },
    )
    # a policy that refuses every ConfigMap create and says who asked, as the server would see it
    admin.create_validating_admission_policy(
        {
            "metadata": {"name": "who"},
            "spec": {
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["configmaps"],
                        }
                    ]
                },
                "validations": [
                    {
                        "expression": "false",
                        "reason": "Forbidden",
                        "messageExpression": "request.userInfo.username + '|'"
                        " + request.userInfo.groups.join(',')"
                        " + '|' + request.userInfo.uid + '|' + request.userInfo.extra['"
                        + EXTRA
                        + "pod-name'][0]"
                        " + '|' + request.userInfo.extra['" + EXTRA + "pod-uid'][0]"
                        " + '|' + request.userInfo.extra['" + EXTRA + "node-name'][0]"
                        " + '|' + request.userInfo.extra['" + EXTRA + "node-uid'][0]"
                        " + '|' + request.userInfo.extra['" + EXTRA + "credential-id'][0].substring(0, 4)",
                    }
                ],
            },
        }
    )
    admin.create_validating_admission_policy_binding(
        {"metadata": {"name": "who"}, "spec": {"policyName": "who", "validationActions": ["Deny"]}}
    )
    token = sim.service_account_token(namespace="ops", name="robot", pod="runner")
    robot: Any = k8s.CoreV1Api(sim.api_client(token))
    with pytest.raises(k8s.ApiException) as refused:
        robot.create_namespaced_config_map("ops", {"metadata": {"name": "x"}})
    assert refused.value.status == 403
    username, groups, uid, pod_name, pod_uid, node_name, node_uid, jti = (
        str(refused.value.body).split("denied request: ")[1].split('"')[0].split("|")
    )
    assert username == "system:serviceaccount:ops:robot"
    assert groups == "system:serviceaccounts,system:serviceaccounts:ops,system:authenticated"
    assert len(uid) == 36 and (pod_name, pod_uid) == ("runner", pod.metadata.uid)
    assert (node_name, node_uid) == (node.metadata.name, node.metadata.uid)
    assert jti == "JTI="

    with pytest.raises(ApiError):  # a pod running as another account gets no token for this one
        sim.service_account_token(namespace="ops", name="other", pod="runner")
    stranger: Any = k8s.CoreV1Api(sim.api_client("not-a-token"))
    with pytest.raises(k8s.ApiException) as unknown:
        stranger.list_namespace()
    assert unknown.value.status == 401
