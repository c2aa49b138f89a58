"""Merge, strategic merge and JSON patches, and server-side apply with managedFields and conflicts."""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.kubesim.helpers import configmap, pod, status_of

APPLY = "application/apply-patch+yaml"


def test_merge_patch_merges_maps_and_null_deletes(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    core.create_namespaced_config_map("default", configmap("cfg", {"a": "1", "b": "2"}))

    patched = core.patch_namespaced_config_map(
        "cfg", "default", {"data": {"a": None, "c": "3"}}, _content_type="application/merge-patch+json"
    )

    assert patched.data == {"b": "2", "c": "3"}


def test_strategic_merge_patch_merges_containers_by_name(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    body = pod("two")
    body["spec"]["containers"].append({"name": "sidecar", "image": "busybox:1"})
    core.create_namespaced_pod("default", body)

    patched = core.patch_namespaced_pod(
        "two",
        "default",
        {"spec": {"containers": [{"name": "sidecar", "image": "busybox:2"}]}},
        _content_type="application/strategic-merge-patch+json",
    )

    assert [(c.name, c.image) for c in patched.spec.containers] == [
        ("main", "nginx:1.27"),
        ("sidecar", "busybox:2"),
    ]


def test_json_patch(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    core.create_namespaced_config_map("default", configmap("cfg", {"a": "1"}))

    patched = core.patch_namespaced_config_map(
        "cfg",
        "default",
        [{"op": "add", "path": "/data/b", "value": "2"}, {"op": "remove", "path": "/data/a"}],
    )

    assert patched.data == {"b": "2"}


def test_object_body_sent_as_json_patch_by_the_client_becomes_strategic_merge(kube_api_client):
    # The official client (kubernetes 37) switches an object body to strategic merge patch on its own.
    core = client.CoreV1Api(kube_api_client)
    core.create_namespaced_config_map("default", configmap("cfg", {"a": "1"}))

    patched = core.patch_namespaced_config_map("cfg", "default", {"data": {"b": "2"}})

    assert patched.data == {"a": "1", "b": "2"}


def _apply(core, manager, data, force=False):
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "quota", "namespace": "default"},
        "data": data,
    }
    return core.patch_namespaced_config_map(
        "quota", "default", body, field_manager=manager, force=force, _content_type=APPLY
    )


def test_apply_creates_then_a_repeated_apply_changes_nothing(kube_api_client):
    core = client.CoreV1Api(kube_api_client)

    created = _apply(core, "gpuplatform", {"gpus": "8"})
    again = _apply(core, "gpuplatform", {"gpus": "8"})

    assert created.data == {"gpus": "8"}
    assert again.metadata.resource_version == created.metadata.resource_version
    entry = created.metadata.managed_fields[0]
    assert (entry.manager, entry.operation, entry.fields_type) == ("gpuplatform", "Apply", "FieldsV1")
    assert entry.fields_v1 == {"f:data": {"f:gpus": {}}}


def test_conflicting_manager_gets_409_with_causes_and_force_wins(kube_api_client):
    """An applier's manager identifier carries no apiVersion (fieldmanager.BuildManagerIdentifier), so
    printManager names it without "using <version>", which only Update managers get."""
    core = client.CoreV1Api(kube_api_client)
    _apply(core, "gpuplatform", {"gpus": "8"})

    with pytest.raises(client.ApiException) as err:
        _apply(core, "intruder", {"gpus": "4"})
    forced = _apply(core, "intruder", {"gpus": "4"}, force=True)

    status = status_of(err.value)
    assert err.value.status == 409 and status["reason"] == "Conflict"
    assert status["message"] == 'Apply failed with 1 conflict: conflict with "gpuplatform": .data.gpus'
    assert status["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "gpuplatform"',
            "field": ".data.gpus",
        }
    ]
    assert forced.data == {"gpus": "4"}
    owners = {e.manager: e.fields_v1 for e in forced.metadata.managed_fields}
    assert owners == {"intruder": {"f:data": {"f:gpus": {}}}}


def test_same_value_from_another_manager_is_shared_not_a_conflict(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    _apply(core, "gpuplatform", {"gpus": "8"})

    shared = _apply(core, "auditor", {"gpus": "8"})

    assert {e.manager for e in shared.metadata.managed_fields} == {"gpuplatform", "auditor"}


def test_apply_removes_fields_the_manager_stopped_applying(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    _apply(core, "gpuplatform", {"gpus": "8", "mig": "1g.10gb"})

    trimmed = _apply(core, "gpuplatform", {"gpus": "8"})

    assert trimmed.data == {"gpus": "8"}


def test_update_by_another_manager_then_apply_conflicts(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    _apply(core, "gpuplatform", {"gpus": "8"})
    core.patch_namespaced_config_map(
        "quota",
        "default",
        {"data": {"gpus": "2"}},
        field_manager="kubectl-edit",
        _content_type="application/merge-patch+json",
    )

    with pytest.raises(client.ApiException) as err:
        _apply(core, "gpuplatform", {"gpus": "8"})

    assert 'conflict with "kubectl-edit"' in status_of(err.value)["message"]


def test_apply_without_field_manager_is_rejected(kube_api_client):
    core = client.CoreV1Api(kube_api_client)

    with pytest.raises(client.ApiException) as err:
        core.patch_namespaced_config_map(
            "quota",
            "default",
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "quota"}},
            _content_type=APPLY,
        )

    assert err.value.status == 422
    assert "fieldManager: Required value" in status_of(err.value)["message"]


def test_apply_merges_list_items_by_key(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    core.create_namespaced_pod("default", pod("worker"))
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "worker"},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.28"}]},
    }

    applied = core.patch_namespaced_pod(
        "worker", "default", body, field_manager="rollout", force=True, _content_type=APPLY
    )

    assert [(c.name, c.image) for c in applied.spec.containers] == [("main", "nginx:1.28")]
    rollout = next(e for e in applied.metadata.managed_fields if e.manager == "rollout")
    assert rollout.fields_v1 == {
        "f:spec": {"f:containers": {'k:{"name":"main"}': {".": {}, "f:image": {}, "f:name": {}}}}
    }
