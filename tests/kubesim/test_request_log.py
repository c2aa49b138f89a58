"""kubesim's request log names each request as the API server's authorizer would: verb, API group,
resource and subresource, namespace, name. Off unless asked for."""

from __future__ import annotations

from kubernetes import client

from kubesim.request_log import LoggedRequest

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-1"}}


def test_each_request_is_logged_with_the_verb_rbac_sees(kubesim_factory):
    sim = kubesim_factory(request_log=True)
    api = sim.api_client()
    core = client.CoreV1Api(api)
    core.create_node(NODE)
    core.list_node(limit=5)
    core.list_node(watch=True, timeout_seconds=1, _preload_content=False).release_conn()
    core.read_node("gpu-1")
    core.patch_node(
        "gpu-1", {"metadata": {"labels": {"a": "b"}}}, _content_type="application/merge-patch+json"
    )
    core.patch_node_status(
        "gpu-1", {"status": {"phase": "Running"}}, _content_type="application/merge-patch+json"
    )
    core.patch_namespaced_config_map(
        "c",
        "default",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
        field_manager="t",
        _content_type="application/apply-patch+yaml",
    )
    client.ResourceV1Api(api).list_resource_claim_for_all_namespaces()
    core.delete_node("gpu-1")
    assert sim.api.request_log.entries() == [
        LoggedRequest("create", "", "nodes", "", "", ""),
        LoggedRequest("list", "", "nodes", "", "", ""),
        LoggedRequest("watch", "", "nodes", "", "", ""),
        LoggedRequest("get", "", "nodes", "", "", "gpu-1"),
        LoggedRequest("patch", "", "nodes", "", "", "gpu-1"),
        LoggedRequest("patch", "", "nodes", "status", "", "gpu-1"),
        LoggedRequest("patch", "", "configmaps", "", "default", "c"),  # an apply that creates: still patch
        LoggedRequest("list", "resource.k8s.io", "resourceclaims", "", "", ""),
        LoggedRequest("delete", "", "nodes", "", "", "gpu-1"),
    ]
    assert ("", "nodes/status", "patch") in sim.api.request_log.permissions()


def test_without_the_option_nothing_is_kept(kubesim):
    client.CoreV1Api(kubesim.api_client()).list_node()
    assert kubesim.api.request_log is None
