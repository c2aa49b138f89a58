"""Status subresources, pods/binding, schema validation and unknown fields."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from tests.kubesim.helpers import node, pod, raw_call, status_of


def test_main_resource_writes_ignore_status(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    core.create_namespaced_pod("default", pod("p"))

    patched = core.patch_namespaced_pod(
        "p",
        "default",
        {"status": {"phase": "Running"}, "metadata": {"labels": {"a": "b"}}},
        _content_type="application/merge-patch+json",
    )

    assert patched.status.phase == "Pending" and patched.metadata.labels == {"a": "b"}


def test_status_subresource_changes_only_status(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    core.create_namespaced_pod("default", pod("p"))

    patched = core.patch_namespaced_pod_status(
        "p",
        "default",
        {"status": {"phase": "Running"}, "spec": {"nodeName": "sneaky"}},
        _content_type="application/merge-patch+json",
    )

    assert patched.status.phase == "Running" and patched.spec.node_name is None


def test_create_resets_status_of_pods_but_keeps_node_status(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    body = pod("p")
    body["status"] = {"phase": "Running"}

    created = core.create_namespaced_pod("default", body)
    created_node = core.create_node(node("n1", gpus=4))

    assert created.status.phase == "Pending"
    assert created_node.status.capacity == {"nvidia.com/gpu": "4"}


def test_binding_sets_node_once(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    core.create_namespaced_pod("default", pod("p"))
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "gpu-1"},
    }

    core.create_namespaced_pod_binding("p", "default", binding, _preload_content=False)
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_pod_binding("p", "default", binding, _preload_content=False)

    assert core.read_namespaced_pod("p", "default").spec.node_name == "gpu-1"
    status = status_of(err.value)
    assert err.value.status == 409
    assert (
        status["message"]
        == 'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "gpu-1"'
    )


def test_invalid_object_is_422_with_causes(kube_api_client):
    body = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {"nodeName": "n1"},
    }

    code, status, _ = raw_call(kube_api_client, "POST", "/apis/resource.k8s.io/v1/resourceslices", body)

    assert code == 422 and status["reason"] == "Invalid"
    assert {(c["reason"], c["field"]) for c in status["details"]["causes"]} == {
        ("FieldValueRequired", "spec.driver"),
        ("FieldValueRequired", "spec.pool"),
    }
    assert status["details"]["kind"] == "ResourceSlice" and status["details"]["group"] == "resource.k8s.io"
    assert status["message"].startswith('ResourceSlice.resource.k8s.io "s" is invalid: [')


def test_pod_without_containers_is_422(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    body = pod("empty")
    body["spec"]["containers"] = []

    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_pod("default", body)

    assert err.value.status == 422
    assert status_of(err.value)["details"]["causes"][0]["field"] == "spec.containers"


def test_unknown_fields_warn_by_default_and_fail_when_strict(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    body = pod("typo")
    body["spec"]["contianers"] = []

    code, created, headers = raw_call(kube_api_client, "POST", "/api/v1/namespaces/default/pods", body)
    strict_code, status, _ = raw_call(
        kube_api_client,
        "POST",
        "/api/v1/namespaces/default/pods",
        dict(body, metadata={"name": "typo2"}),
        query={"fieldValidation": "Strict"},
    )

    assert code == 201 and "contianers" not in created["spec"]
    assert headers["Warning"] == '299 - "unknown field "spec.contianers""'
    assert core.read_namespaced_pod("typo", "default").metadata.name == "typo"
    assert strict_code == 400 and status["reason"] == "BadRequest"
    assert 'strict decoding error: unknown field "spec.contianers"' in status["message"]


def test_older_resource_versions_are_converted(kube_api_client):
    api = client.ApiClient(kube_api_client.configuration)
    beta = client.ResourceV1beta1Api(api)
    body = {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "ResourceClaim",
        "metadata": {"name": "one-gpu", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.nvidia.com"}]}},
    }

    beta.create_namespaced_resource_claim("default", body)
    v1 = client.ResourceV1Api(api).read_namespaced_resource_claim("one-gpu", "default")
    back = json.loads(beta.read_namespaced_resource_claim("one-gpu", "default", _preload_content=False).data)

    assert v1.spec.devices.requests[0].exactly.device_class_name == "gpu.nvidia.com"
    assert v1.spec.devices.requests[0].exactly.count == 1
    assert back["apiVersion"] == "resource.k8s.io/v1beta1"
    assert back["spec"]["devices"]["requests"][0]["deviceClassName"] == "gpu.nvidia.com"
