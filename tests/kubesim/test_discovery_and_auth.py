"""Discovery documents and bearer-token authentication."""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.kubesim.helpers import status_of


def test_version_and_discovery(kube_api_client):
    version = client.VersionApi(kube_api_client).get_code()
    core_resources = client.CoreV1Api(kube_api_client).get_api_resources()
    groups = client.ApisApi(kube_api_client).get_api_versions()
    dra = client.ResourceV1Api(kube_api_client).get_api_resources()

    assert version.major == "1" and version.git_version.startswith("v1.")
    names = {r.name for r in core_resources.resources}
    assert {
        "pods",
        "pods/status",
        "pods/binding",
        "nodes",
        "nodes/status",
        "namespaces",
        "configmaps",
        "resourcequotas",
        "events",
    } <= names
    by_name = {g.name: g for g in groups.groups}
    assert by_name["resource.k8s.io"].preferred_version.version == "v1"
    assert {"v1", "v1beta2", "v1beta1"} <= {v.version for v in by_name["resource.k8s.io"].versions}
    assert "admissionregistration.k8s.io" in by_name
    assert {r.name for r in dra.resources} >= {
        "deviceclasses",
        "resourceslices",
        "resourceclaims",
        "resourceclaims/status",
        "resourceclaimtemplates",
        "devicetaintrules",
        "devicetaintrules/status",
    }


def test_wrong_token_is_401_status(kubesim):
    api = kubesim.api_client()
    api.configuration.api_key["authorization"] = "not-the-token"

    with pytest.raises(client.ApiException) as err:
        client.CoreV1Api(api).list_namespace()

    status = status_of(err.value)
    assert (
        err.value.status == 401 and status["reason"] == "Unauthorized" and status["message"] == "Unauthorized"
    )


def test_no_token_is_401_on_api_paths(kubesim):
    api = kubesim.api_client()
    api.configuration.api_key = {}

    with pytest.raises(client.ApiException) as err:
        client.CoreV1Api(api).list_node()

    assert err.value.status == 401


def test_kubeconfig_loads_with_the_official_loader(kubesim):
    from kubernetes import config

    api = config.new_client_from_config(config_file=str(kubesim.kubeconfig_path))

    assert [n.metadata.name for n in client.CoreV1Api(api).list_namespace().items] == [
        "default",
        "kube-node-lease",
        "kube-public",
        "kube-system",
    ]
