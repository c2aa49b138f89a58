"""Server-side apply against the same manager's own Update: two managers, as the real server counts
them (kubernetes/kubernetes#107417: the manager identifier includes the operation)."""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.kubesim.helpers import configmap, status_of

APPLY = "application/apply-patch+yaml"


def _apply(core: client.CoreV1Api, manager: str, data: dict[str, str], *, force: bool = False):
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "quota"}, "data": data}
    return core.patch_namespaced_config_map(
        "quota", "default", body, field_manager=manager, force=force, _content_type=APPLY
    )


def _owners(obj) -> dict[tuple[str, str], dict]:
    return {(e.manager, e.operation): e.fields_v1 for e in obj.metadata.managed_fields}


def test_apply_of_a_field_the_same_manager_created_by_update_conflicts(kube_api_client):
    # given: gpuplatform created the object with a plain create (an Update operation)
    core = client.CoreV1Api(kube_api_client)
    core.create_namespaced_config_map(
        "default", configmap("quota", {"gpus": "8"}), field_manager="gpuplatform"
    )

    # when: gpuplatform applies a different value
    with pytest.raises(client.ApiException) as err:
        _apply(core, "gpuplatform", {"gpus": "4"})

    # then: its own Update entry is another manager
    status = status_of(err.value)
    assert err.value.status == 409 and status["reason"] == "Conflict"
    assert (
        status["message"] == 'Apply failed with 1 conflict: conflict with "gpuplatform" using v1: .data.gpus'
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "gpuplatform" using v1',
            "field": ".data.gpus",
        }
    ]
    assert core.read_namespaced_config_map("quota", "default").data == {"gpus": "8"}


def test_forced_apply_takes_the_field_from_the_same_managers_update_entry(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    core.create_namespaced_config_map(
        "default", configmap("quota", {"gpus": "8", "mig": "1g"}), field_manager="gpuplatform"
    )

    forced = _apply(core, "gpuplatform", {"gpus": "4"}, force=True)

    assert forced.data == {"gpus": "4", "mig": "1g"}
    assert _owners(forced) == {
        ("gpuplatform", "Update"): {"f:data": {"f:mig": {}}},
        ("gpuplatform", "Apply"): {"f:data": {"f:gpus": {}}},
    }


def test_apply_of_the_same_value_shares_the_field_with_the_update_entry(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    core.create_namespaced_config_map(
        "default", configmap("quota", {"gpus": "8"}), field_manager="gpuplatform"
    )

    shared = _apply(core, "gpuplatform", {"gpus": "8"})

    assert _owners(shared) == {
        ("gpuplatform", "Update"): {"f:data": {"f:gpus": {}}},
        ("gpuplatform", "Apply"): {"f:data": {"f:gpus": {}}},
    }


def test_update_after_apply_by_the_same_manager_takes_the_field_and_the_next_apply_conflicts(kube_api_client):
    # The drift-repair case: gpuplatform applies, then someone edits with gpuplatform's name via PUT.
    core = client.CoreV1Api(kube_api_client)
    _apply(core, "gpuplatform", {"gpus": "8"})
    live = core.read_namespaced_config_map("quota", "default")
    live.data = {"gpus": "2"}
    core.replace_namespaced_config_map("quota", "default", live, field_manager="gpuplatform")

    with pytest.raises(client.ApiException) as err:
        _apply(core, "gpuplatform", {"gpus": "8"})
    repaired = _apply(core, "gpuplatform", {"gpus": "8"}, force=True)

    assert err.value.status == 409
    assert repaired.data == {"gpus": "8"}
    assert _owners(repaired) == {("gpuplatform", "Apply"): {"f:data": {"f:gpus": {}}}}
