"""Small builders shared by the kubesim conformance tests."""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client


def pod(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    node: str | None = None,
    image: str = "nginx:1.27",
    namespace: str = "default",
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": image}]}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": spec,
    }


def node(name: str, *, labels: dict[str, str] | None = None, gpus: int = 8) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "status": {"capacity": {"nvidia.com/gpu": str(gpus)}, "allocatable": {"nvidia.com/gpu": str(gpus)}},
    }


def configmap(name: str, data: dict[str, str] | None = None, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data or {},
    }


def device_class(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]},
    }


def status_of(exc: client.ApiException) -> dict[str, Any]:
    """The Status object a failed call answered."""
    body = json.loads(exc.body)
    assert body["kind"] == "Status" and body["apiVersion"] == "v1" and body["status"] == "Failure"
    assert body["code"] == exc.status
    return body


def raw_call(
    api: client.ApiClient,
    method: str,
    path: str,
    body: Any = None,
    *,
    content_type: str = "application/json",
    query: dict[str, str] | None = None,
) -> tuple[int, Any, Any]:
    """A request through the official client's own transport, without its client-side body validation
    (the typed methods refuse bodies a real server would answer with 400/422)."""
    method, url, headers, body, post = api.param_serialize(
        method,
        path,
        query_params=list((query or {}).items()),
        header_params={"Content-Type": content_type, "Accept": "application/json"},
        body=body,
        auth_settings=["BearerToken"],
    )
    resp = api.call_api(method, url, headers, body, post)
    resp.read()
    return resp.status, json.loads(resp.data or b"null"), resp.getheaders()
