"""CustomResourceDefinitions: a CRD serves its kinds with structural validation, defaulting, pruning,
CEL rules, the status subresource and server-side apply, through the official client."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from tests.kubesim.crd_helpers import kueue_crds, widget, widget_crd
from tests.kubesim.helpers import status_of

APPLY = "application/apply-patch+yaml"
GROUP, VERSION, PLURAL = "example.com", "v1", "widgets"


@pytest.fixture
def custom(kube_api_client) -> client.CustomObjectsApi:
    client.ApiextensionsV1Api(kube_api_client).create_custom_resource_definition(widget_crd())
    return client.CustomObjectsApi(kube_api_client)


def _create(custom: client.CustomObjectsApi, body: dict, namespace: str = "default") -> dict:
    created = custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
    assert isinstance(created, dict)
    return created


def _invalid(exc: pytest.ExceptionInfo[client.ApiException]) -> tuple[str, list[dict]]:
    status = status_of(exc.value)
    assert exc.value.status == 422 and status["reason"] == "Invalid"
    return status["message"], status["details"]["causes"]


def test_a_created_crd_is_established_and_listed_in_discovery(kube_api_client):
    crd = client.ApiextensionsV1Api(kube_api_client).create_custom_resource_definition(widget_crd())

    assert {c.type: c.status for c in crd.status.conditions} == {
        "NamesAccepted": "True",
        "Established": "True",
    }
    assert crd.status.stored_versions == ["v1"]
    resources = client.CustomObjectsApi(kube_api_client).get_api_resources(GROUP, VERSION).resources
    assert {(r.name, r.kind, r.namespaced) for r in resources} == {
        ("widgets", "Widget", True),
        ("widgets/status", "Widget", True),
    }
    groups = {
        g.name: g.preferred_version.version for g in client.ApisApi(kube_api_client).get_api_versions().groups
    }
    assert groups["example.com"] == "v1"


def test_create_defaults_prunes_unknown_fields_and_starts_generation(custom):
    created = _create(custom, {**widget("w1", size=3), "extra": 1} | {"spec": {"size": 3, "bogus": True}})

    assert created["spec"] == {"size": 3, "maxSize": 10, "mode": "Fast"}
    assert "extra" not in created
    assert created["metadata"]["generation"] == 1


def test_schema_errors_answer_422_with_the_servers_causes(custom):
    with pytest.raises(client.ApiException) as err:
        _create(custom, widget("w1", size=0, mode="Turbo", pool="BAD", tags=["a", "a"]))

    message, causes = _invalid(err)
    assert message.startswith('Widget.example.com "w1" is invalid: [')
    assert {(c["field"], c["message"]) for c in causes} == {
        ("spec.size", "Invalid value: 0: spec.size in body should be greater than or equal to 1"),
        ("spec.mode", 'Unsupported value: "Turbo": supported values: "Fast", "Slow"'),
        ("spec.pool", "Invalid value: \"BAD\": spec.pool in body should match '^[a-z]+$'"),
        ("spec.tags[1]", 'Duplicate value: "a"'),
    }


def test_a_missing_required_field_and_a_wrong_type(custom):
    with pytest.raises(client.ApiException) as missing:
        _create(custom, widget("w1", mode="Fast"))
    with pytest.raises(client.ApiException) as typed:
        _create(custom, widget("w2", size="three"))

    # The rule that reads the missing field fails to evaluate, and the server reports that too.
    assert _invalid(missing)[1] == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.size"},
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "object": no such key: size evaluating rule: '
            "self.size <= self.maxSize",
            "field": "spec",
        },
    ]
    assert _invalid(typed)[1] == [
        {
            "reason": "FieldValueTypeInvalid",
            "message": 'Invalid value: "string": spec.size in body must be of type integer: "string"',
            "field": "spec.size",
        }
    ]


def test_cel_rules_and_transition_rules(custom):
    with pytest.raises(client.ApiException) as too_big:
        _create(custom, widget("w1", size=20, maxSize=10))
    _create(custom, widget("w2", size=2, pool="a"))
    with pytest.raises(client.ApiException) as moved:
        custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            "default",
            PLURAL,
            "w2",
            {"spec": {"pool": "b"}},
            _content_type="application/merge-patch+json",
        )

    assert _invalid(too_big)[1] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "object": size must not exceed maxSize',
            "field": "spec.size",
        }
    ]
    assert (
        _invalid(moved)[0]
        == 'Widget.example.com "w2" is invalid: spec: Invalid value: "object": pool is immutable'
    )


def test_status_subresource_splits_spec_and_status_writes(custom):
    created = _create(custom, {**widget("w1", size=2), "status": {"ready": True}})
    assert "status" not in created  # reset on create

    updated = custom.patch_namespaced_custom_object_status(
        GROUP,
        VERSION,
        "default",
        PLURAL,
        "w1",
        {"status": {"ready": True}, "spec": {"size": 9}},
        _content_type="application/merge-patch+json",
    )

    assert updated["status"] == {"ready": True}
    assert updated["spec"]["size"] == 2
    assert updated["metadata"]["generation"] == 1


def test_list_with_label_selector_and_pages(custom):
    for i in range(5):
        body = widget(f"w{i}", size=1)
        body["metadata"]["labels"] = {"team": "a" if i % 2 else "b"}
        _create(custom, body)

    first = custom.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, limit=2)
    rest = custom.list_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, limit=10, _continue=first["metadata"]["continue"]
    )
    team_a = custom.list_cluster_custom_object(GROUP, VERSION, PLURAL, label_selector="team=a")

    assert first["kind"] == "WidgetList" and first["apiVersion"] == "example.com/v1"
    assert [w["metadata"]["name"] for w in first["items"] + rest["items"]] == ["w0", "w1", "w2", "w3", "w4"]
    assert [w["metadata"]["name"] for w in team_a["items"]] == ["w1", "w3"]


def test_json_patch_works_and_strategic_merge_patch_is_refused(custom, kube_api_client):
    _create(custom, widget("w1", size=1))

    patched = custom.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        "default",
        PLURAL,
        "w1",
        [{"op": "replace", "path": "/spec/size", "value": 5}],
        _content_type="application/json-patch+json",
    )
    with pytest.raises(client.ApiException) as err:
        custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            "default",
            PLURAL,
            "w1",
            {"spec": {"size": 6}},
            _content_type="application/strategic-merge-patch+json",
        )

    assert patched["spec"]["size"] == 5 and patched["metadata"]["generation"] == 2
    assert err.value.status == 415


def test_server_side_apply_merges_map_lists_by_key_and_conflicts_across_managers(custom):
    body = widget("w1", size=1, ports=[{"name": "http", "port": 80}])
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, "w1", body, field_manager="gpuplatform", _content_type=APPLY
    )
    other = widget("w1", ports=[{"name": "metrics", "port": 9090}])
    merged = custom.patch_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, "w1", other, field_manager="monitoring", _content_type=APPLY
    )
    edit = widget("w1", size=4)
    custom.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        "default",
        PLURAL,
        "w1",
        edit,
        field_manager="gpuplatform",
        _content_type="application/merge-patch+json",
    )

    with pytest.raises(client.ApiException) as err:
        custom.patch_namespaced_custom_object(
            GROUP, VERSION, "default", PLURAL, "w1", body, field_manager="gpuplatform", _content_type=APPLY
        )

    assert [p["name"] for p in merged["spec"]["ports"]] == ["http", "metrics"]
    status = status_of(err.value)
    assert err.value.status == 409
    assert status["message"] == (
        'Apply failed with 1 conflict: conflict with "gpuplatform" using example.com/v1: .spec.size'
    )


def test_deleting_the_crd_deletes_its_objects_and_stops_serving(custom, kube_api_client, kubesim):
    _create(custom, widget("w1", size=1))

    client.ApiextensionsV1Api(kube_api_client).delete_custom_resource_definition("widgets.example.com")

    with pytest.raises(client.ApiException) as err:
        custom.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)
    assert err.value.status == 404
    assert kubesim.store.custom_resources() == []


def test_a_crd_whose_name_is_not_plural_dot_group_is_invalid(kube_api_client):
    body = widget_crd()
    body["metadata"]["name"] = "gadgets.example.com"

    with pytest.raises(client.ApiException) as err:
        client.ApiextensionsV1Api(kube_api_client).create_custom_resource_definition(body)

    assert _invalid(err)[1][0]["field"] == "metadata.name"


def test_cluster_scoped_kinds_are_served_without_namespace(kube_api_client):
    client.ApiextensionsV1Api(kube_api_client).create_custom_resource_definition(widget_crd(scope="Cluster"))
    custom = client.CustomObjectsApi(kube_api_client)

    created = custom.create_cluster_custom_object(GROUP, VERSION, PLURAL, widget("w1", size=1))

    assert "namespace" not in created["metadata"]
    assert custom.get_cluster_custom_object(GROUP, VERSION, PLURAL, "w1")["spec"]["size"] == 1


def test_kueue_crds_install_and_validate_a_cluster_queue(kube_api_client):
    ext = client.ApiextensionsV1Api(kube_api_client)
    for crd in kueue_crds():
        ext.create_custom_resource_definition(crd)
    custom = client.CustomObjectsApi(kube_api_client)
    queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "vision"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        {"name": "a100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}
                    ],
                }
            ],
        },
    }
    bad = json.loads(json.dumps(queue))
    bad["metadata"]["name"] = "broken"
    bad["spec"]["resourceGroups"][0]["coveredResources"].append("cpu")

    created = custom.create_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues", queue)
    with pytest.raises(client.ApiException) as err:
        custom.create_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues", bad)

    assert created["spec"]["queueingStrategy"] == "BestEffortFIFO"  # the CRD's default
    assert created["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == 8
    message, causes = _invalid(err)
    assert "flavors" in message or any(
        "flavors" in c["field"] or "resourceGroups" in c["field"] for c in causes
    )
