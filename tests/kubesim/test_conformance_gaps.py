"""Behaviour of the real API server that kubesim used to be kinder about (issue 14), one test per gap."""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.kubesim.helpers import configmap, node, pod, raw_call, status_of

APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"


def _causes(exc: client.ApiException) -> list[tuple[str, str]]:
    return [(c.get("field", ""), c["message"]) for c in status_of(exc)["details"]["causes"]]


def test_server_side_apply_to_status_records_and_removes_the_appliers_fields(kube_api_client):
    """SSA to /status records a managedFields entry with subresource "status", so a field left out of
    the next apply is removed (https://kubernetes.io/docs/reference/using-api/server-side-apply/)."""
    core = client.CoreV1Api(kube_api_client)
    core.create_node(node("gpu-1"))
    applied = {"apiVersion": "v1", "kind": "Node", "status": {"capacity": {"example.com/fpga": "2"}}}

    first = core.patch_node_status("gpu-1", applied, field_manager="agent", _content_type=APPLY)
    del applied["status"]["capacity"]["example.com/fpga"]
    applied["status"]["capacity"]["example.com/asic"] = "1"
    second = core.patch_node_status("gpu-1", applied, field_manager="agent", _content_type=APPLY)

    entry = next(e for e in first.metadata.managed_fields if e.manager == "agent")
    assert entry.operation == "Apply" and entry.subresource == "status"
    first_capacity, second_capacity = first.status.capacity or {}, second.status.capacity or {}
    assert "example.com/fpga" in first_capacity
    assert "example.com/fpga" not in second_capacity and second_capacity["example.com/asic"] == "1"


def test_a_boolean_field_selector_reads_unset_as_false(kube_api_client):
    """Node's field set formats spec.unschedulable with strconv.FormatBool (pkg/registry/core/node
    strategy.go NodeToSelectableFields), so a node without the field matches `=false`."""
    core = client.CoreV1Api(kube_api_client)
    core.create_node(node("plain"))
    core.create_node(node("cordoned") | {"spec": {"unschedulable": True}})

    schedulable = core.list_node(field_selector="spec.unschedulable=false").items
    cordoned = core.list_node(field_selector="spec.unschedulable!=false").items

    assert [n.metadata.name for n in schedulable] == ["plain"]
    assert [n.metadata.name for n in cordoned] == ["cordoned"]


def test_dry_run_update_and_patch_answer_with_the_current_resource_version(kube_api_client):
    """A dry-run write returns the object as it would be stored, resourceVersion included, and
    stores nothing (https://kubernetes.io/docs/reference/using-api/api-concepts/#dry-run)."""
    core = client.CoreV1Api(kube_api_client)
    created = core.create_namespaced_config_map("default", configmap("c", {"a": "1"}))
    rv = created.metadata.resource_version

    patched = core.patch_namespaced_config_map(
        "c", "default", {"data": {"a": "2"}}, dry_run="All", _content_type=MERGE
    )
    created.data = {"a": "3"}
    replaced = core.replace_namespaced_config_map("c", "default", created, dry_run="All")
    applied = core.patch_namespaced_config_map(
        "c",
        "default",
        {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "4"}},
        dry_run="All",
        field_manager="x",
        force=True,
        _content_type=APPLY,
    )

    assert [patched.data["a"], replaced.data["a"], applied.data["a"]] == ["2", "3", "4"]
    assert {patched.metadata.resource_version, replaced.metadata.resource_version} == {rv}
    assert applied.metadata.resource_version == rv
    assert core.read_namespaced_config_map("c", "default").data == {"a": "1"}


def test_removing_the_last_label_omits_labels_and_their_ownership(kube_api_client):
    """ObjectMeta.labels is `omitempty`: with no labels left the field is gone, and so is any
    managedFields entry for it."""
    core = client.CoreV1Api(kube_api_client)
    core.create_namespaced_config_map(
        "default", configmap("c") | {"metadata": {"name": "c", "labels": {"a": "1"}}}
    )

    status, body, _ = raw_call(
        kube_api_client,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/c",
        {"metadata": {"labels": {"a": None}}},
        content_type=MERGE,
    )

    assert status == 200 and "labels" not in body["metadata"]
    assert all(
        "f:labels" not in e["fieldsV1"].get("f:metadata", {}) for e in body["metadata"]["managedFields"]
    )


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ({"bad key!": "x"}, 'Invalid value: "bad key!": name part must consist of alphanumeric characters'),
        ({"ok": "v" * 70}, "must be no more than 63 characters"),
    ],
)
def test_label_keys_and_values_are_validated(kube_api_client, labels, message):
    """ValidateLabels: keys are qualified names, values at most 63 characters of [-A-Za-z0-9_.]
    (https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set)."""
    status, body, _ = raw_call(
        kube_api_client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        configmap("c") | {"metadata": {"name": "c", "labels": labels}},
    )

    assert status == 422 and body["reason"] == "Invalid"
    assert any(c["field"] == "metadata.labels" and message in c["message"] for c in body["details"]["causes"])


def _slice(**spec) -> dict:
    base = {"driver": "gpu.nvidia.com", "pool": {"name": "p", "resourceSliceCount": 1}, "nodeName": "n1"}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {**base, **spec},
    }


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"devices": [{"name": "GPU_0"}]}, "spec.devices[0].name"),
        ({"driver": "Not_A_Driver"}, "spec.driver"),
        ({"nodeName": None}, "spec"),
        (
            {"devices": [{"name": "gpu-0", "attributes": {"model": {"int": 1, "string": "a"}}}]},
            "spec.devices[0].attributes[model]",
        ),
    ],
)
def test_resource_slices_are_validated_semantically(kube_api_client, spec, field):
    """ValidateResourceSlice (pkg/apis/resource/validation/validation.go): device names are DNS labels,
    the driver a DNS subdomain, exactly one node selection, one value per attribute."""
    body = _slice(**spec)
    body["spec"] = {k: v for k, v in body["spec"].items() if v is not None}

    status, answer, _ = raw_call(kube_api_client, "POST", "/apis/resource.k8s.io/v1/resourceslices", body)

    assert status == 422, answer
    assert field in [c["field"] for c in answer["details"]["causes"]]


def test_a_resource_claims_spec_is_immutable(kube_api_client):
    """ValidateResourceClaimUpdate: `spec: Invalid value: field is immutable`."""
    dra = client.ResourceV1Api(kube_api_client)
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
    }
    dra.create_namespaced_resource_claim("default", claim)

    with pytest.raises(client.ApiException) as err:
        dra.patch_namespaced_resource_claim(
            "c",
            "default",
            {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "other"}}]}}},
            _content_type=MERGE,
        )

    assert err.value.status == 422 and ("spec", "Invalid value: field is immutable") in _causes(err.value)


def test_an_extended_resource_request_must_equal_its_limit(kube_api_client):
    """Extended resources cannot be overcommitted: request == limit
    (https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/#extended-resources)."""
    body = pod("p")
    body["spec"]["containers"][0]["resources"] = {
        "requests": {"nvidia.com/gpu": "1"},
        "limits": {"nvidia.com/gpu": "2"},
    }

    status, answer, _ = raw_call(kube_api_client, "POST", "/api/v1/namespaces/default/pods", body)

    assert status == 422
    fields = [c["field"] for c in answer["details"]["causes"]]
    assert "spec.containers[0].resources.requests[nvidia.com/gpu]" in fields


def test_resource_version_match_is_validated_and_exact_is_served_or_expired(kubesim, kube_api_client):
    """ValidateListOptions and the list semantics of
    https://kubernetes.io/docs/reference/using-api/api-concepts/#semantics-for-get-and-list: Exact
    needs a resourceVersion other than "0"; kubesim keeps no snapshots, so an Exact list of a
    revision the resource has changed since is 410, as for a compacted revision."""
    core = client.CoreV1Api(kube_api_client)
    core.create_namespaced_config_map("default", configmap("a"))
    rv = core.list_namespaced_config_map("default").metadata.resource_version

    same = core.list_namespaced_config_map("default", resource_version=rv, resource_version_match="Exact")
    core.create_namespaced_config_map("default", configmap("b"))
    with pytest.raises(client.ApiException) as old:
        core.list_namespaced_config_map("default", resource_version=rv, resource_version_match="Exact")
    with pytest.raises(client.ApiException) as zero:
        core.list_namespaced_config_map("default", resource_version="0", resource_version_match="Exact")
    with pytest.raises(client.ApiException) as bare:
        core.list_namespaced_config_map("default", resource_version_match="NotOlderThan")

    assert same.metadata.resource_version == rv and [c.metadata.name for c in same.items] == ["a"]
    assert old.value.status == 410 and status_of(old.value)["reason"] == "Expired"
    assert zero.value.status == 422 and bare.value.status == 422


def test_send_initial_events_is_refused(kube_api_client):
    """Without resourceVersionMatch=NotOlderThan a real server refuses sendInitialEvents
    (ValidateListOptions); with it, kubesim answers as a server without the WatchList feature."""
    for query in (
        {"watch": "true", "sendInitialEvents": "true"},
        {
            "watch": "true",
            "sendInitialEvents": "true",
            "resourceVersionMatch": "NotOlderThan",
            "allowWatchBookmarks": "true",
        },
    ):
        status, body, _ = raw_call(kube_api_client, "GET", "/api/v1/configmaps", query=query)

        assert status == 422 and body["details"]["causes"][0]["field"] == "sendInitialEvents"


def test_quantities_are_stored_in_canonical_form(kube_api_client):
    """resource.Quantity is written back canonically: the largest suffix keeping an integer mantissa,
    in the format it was written in (https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/quantity/)."""
    core = client.CoreV1Api(kube_api_client)
    body = node("gpu-1")
    body["status"]["capacity"] = {"memory": "81920Mi", "cpu": "1000m", "nvidia.com/gpu": "8", "pods": "1000"}

    created = core.create_node(body)

    assert created.status.capacity == {"memory": "80Gi", "cpu": "1", "nvidia.com/gpu": "8", "pods": "1k"}


def test_a_string_that_is_no_quantity_is_refused(kube_api_client):
    """Decoding fails on a bad quantity, so the answer is 400 "cannot be handled as" with the regular
    expression apimachinery's ParseQuantity reports."""
    body = pod("p")
    body["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "lots"}}

    status, answer, _ = raw_call(kube_api_client, "POST", "/api/v1/namespaces/default/pods", body)

    assert status == 400 and answer["reason"] == "BadRequest"
    assert "quantities must match the regular expression" in answer["message"]


def test_a_conflict_names_each_owner_once_and_an_appliers_without_a_version(kube_api_client):
    """fieldmanager's NewConflictError: one line per (manager identifier, field), Update owners
    "using <apiVersion>", appliers by name alone, managers sorted by identifier."""
    core = client.CoreV1Api(kube_api_client)
    core.create_namespaced_config_map("default", configmap("c", {"a": "1"}), field_manager="ops")
    core.patch_namespaced_config_map(
        "c",
        "default",
        {"apiVersion": "v1", "kind": "ConfigMap", "data": {"b": "1"}},
        field_manager="ops",
        _content_type=APPLY,
    )

    with pytest.raises(client.ApiException) as err:
        core.patch_namespaced_config_map(
            "c",
            "default",
            {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "2", "b": "2"}},
            field_manager="intruder",
            _content_type=APPLY,
        )

    assert status_of(err.value)["message"] == (
        'Apply failed with 2 conflicts: conflicts with "ops":\n- .data.b\n'
        'conflicts with "ops" using v1:\n- .data.a'
    )
