"""Create, get, replace, delete through the official client, answered as a real API server would."""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.kubesim.helpers import configmap, node, pod, status_of


def test_create_sets_system_metadata(kube_api_client):
    core = client.CoreV1Api(kube_api_client)

    created = core.create_namespaced_pod("default", pod("alice-train"))

    assert created.metadata.uid and created.metadata.creation_timestamp is not None
    assert int(created.metadata.resource_version) > 0
    assert created.metadata.generation == 1
    assert created.status.phase == "Pending"
    assert created.spec.restart_policy == "Always"  # defaulted like the real server


def test_each_write_bumps_one_global_resource_version(kube_api_client):
    core = client.CoreV1Api(kube_api_client)

    rvs = [
        int(core.create_namespaced_config_map("default", configmap(f"cm-{i}")).metadata.resource_version)
        for i in range(3)
    ]
    rvs.append(int(core.create_node(node("gpu-node-1")).metadata.resource_version))

    assert rvs == sorted(rvs) and len(set(rvs)) == 4


def test_create_twice_is_409_already_exists(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    core.create_namespaced_config_map("default", configmap("settings"))

    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_config_map("default", configmap("settings"))

    status = status_of(err.value)
    assert err.value.status == 409 and status["reason"] == "AlreadyExists"
    assert status["message"] == 'configmaps "settings" already exists'
    assert status["details"] == {"name": "settings", "kind": "configmaps"}


def test_get_missing_is_404_with_group_in_details(kube_api_client):
    resource = client.ResourceV1Api(kube_api_client)

    with pytest.raises(client.ApiException) as err:
        resource.read_device_class("nope")

    status = status_of(err.value)
    assert status["reason"] == "NotFound"
    assert status["message"] == 'deviceclasses.resource.k8s.io "nope" not found'
    assert status["details"] == {"name": "nope", "group": "resource.k8s.io", "kind": "deviceclasses"}


def test_stale_replace_is_409_conflict(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    first = core.create_namespaced_config_map("default", configmap("quota", {"a": "1"}))
    first.data = {"a": "2"}
    core.replace_namespaced_config_map("quota", "default", first)

    first.data = {"a": "3"}  # still carries the old resourceVersion
    with pytest.raises(client.ApiException) as err:
        core.replace_namespaced_config_map("quota", "default", first)

    status = status_of(err.value)
    assert status["reason"] == "Conflict"
    assert "the object has been modified" in status["message"]
    assert core.read_namespaced_config_map("quota", "default").data == {"a": "2"}


def test_noop_replace_keeps_resource_version(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    created = core.create_namespaced_config_map("default", configmap("same", {"a": "1"}))

    replaced = core.replace_namespaced_config_map("same", "default", created)

    assert replaced.metadata.resource_version == created.metadata.resource_version


def test_generation_bumps_on_spec_change_only(kube_api_client):
    resource = client.ResourceV1Api(kube_api_client)
    body = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": "true"}}]},
    }
    resource.create_device_class(body)

    labelled = resource.patch_device_class(
        "gpu", {"metadata": {"labels": {"tier": "a"}}}, _content_type="application/merge-patch+json"
    )
    changed = resource.patch_device_class(
        "gpu",
        {"spec": {"selectors": [{"cel": {"expression": "false"}}]}},
        _content_type="application/merge-patch+json",
    )

    assert labelled.metadata.generation == 1
    assert changed.metadata.generation == 2


def test_create_in_missing_namespace_is_404(kube_api_client):
    core = client.CoreV1Api(kube_api_client)

    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_config_map("nowhere", configmap("x", namespace="nowhere"))

    assert err.value.status == 404 and status_of(err.value)["message"] == 'namespaces "nowhere" not found'


def test_delete_missing_is_404(kube_api_client):
    core = client.CoreV1Api(kube_api_client)

    with pytest.raises(client.ApiException) as err:
        core.delete_namespaced_pod("ghost", "default")

    assert err.value.status == 404 and status_of(err.value)["reason"] == "NotFound"


def test_delete_answers_success_status_or_the_object_by_kind(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    core.create_namespaced_config_map("default", configmap("gone"))
    core.create_namespaced_pod("default", pod("gone"))

    cm = core.delete_namespaced_config_map("gone", "default", _preload_content=False)
    deleted_pod = core.delete_namespaced_pod("gone", "default")

    import json

    assert json.loads(cm.data)["status"] == "Success"
    assert deleted_pod.metadata.name == "gone"


def test_finalizers_hold_the_object_until_removed(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    body = configmap("held")
    body["metadata"]["finalizers"] = ["gpuplatform.io/cleanup"]
    core.create_namespaced_config_map("default", body)

    core.delete_namespaced_config_map("held", "default")
    terminating = core.read_namespaced_config_map("held", "default")
    with pytest.raises(client.ApiException) as err:
        core.patch_namespaced_config_map(
            "held",
            "default",
            {"metadata": {"finalizers": ["a", "gpuplatform.io/cleanup"]}},
            _content_type="application/merge-patch+json",
        )
    core.patch_namespaced_config_map(
        "held", "default", {"metadata": {"finalizers": None}}, _content_type="application/merge-patch+json"
    )

    assert terminating.metadata.deletion_timestamp is not None
    assert err.value.status == 422
    with pytest.raises(client.ApiException) as gone:
        core.read_namespaced_config_map("held", "default")
    assert gone.value.status == 404


def test_namespace_delete_removes_its_objects(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-bob"}})
    core.create_namespaced_config_map("team-bob", configmap("x", namespace="team-bob"))

    core.delete_namespace("team-bob")

    assert core.list_namespaced_config_map("team-bob").items == []
    with pytest.raises(client.ApiException):
        core.read_namespace("team-bob")


def test_background_deletion_cascades_to_dependents(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    owner = core.create_namespaced_config_map("default", configmap("owner"))
    child = configmap("child")
    child["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}
    ]
    core.create_namespaced_config_map("default", child)

    core.delete_namespaced_config_map("owner", "default", propagation_policy="Background")

    assert [c.metadata.name for c in core.list_namespaced_config_map("default").items] == []
