"""The one module that touches the official ``kubernetes`` client (DESIGN §6).

Lists and watches return decoded JSON dicts, not the client's models: ``_preload_content=False``
skips model deserialisation, which dominates the cost of listing 150,000 pods, and the parsers in
``inventory.domain`` read the raw shapes (any served API version) anyway. Their bodies are decoded
with orjson: the standard library's ``json`` was ~11 % of a 5,000-node cold sync (docs/benchmarks.md).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import orjson
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError, ProtocolError

from inventory.kubeconfig import VettedKubeconfig

__all__ = [
    "FIELD_MANAGER",
    "Gone",
    "KubeError",
    "ListPage",
    "WatchEvent",
    "api_client",
    "apply_admission_object",
    "apply_custom_object",
    "apply_resource_claim",
    "apply_resource_quota",
    "delete_admission_object",
    "delete_custom_object",
    "delete_resource_claim",
    "delete_resource_quota",
    "list_admission_objects",
    "list_custom_objects",
    "list_pages",
    "merge_patch_custom_status",
    "watch_events",
]

# Server-side apply: our field manager owns exactly the fields we send, so a platform team's own
# edits to other fields of the same object survive, and a conflict on ours is forced (we are the
# authority on what a tenant was granted).
FIELD_MANAGER = "gpuplatform"
APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
# Kueue's API at the version the compiler targets (quotas/kueue/model.py, docs/kueue.md).
KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSION = "v1beta2"


class KubeError(Exception):
    """The API server could not be reached or answered an error; retry with backoff."""

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class Gone(KubeError):
    """410: the resourceVersion is older than the server's history. Re-list."""


@dataclass(frozen=True, slots=True)
class ListPage:
    items: list[dict[str, Any]]
    resource_version: str  # of the whole list (the same on every page)
    last: bool


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: str  # ADDED | MODIFIED | DELETED | BOOKMARK
    object: dict[str, Any]

    @property
    def resource_version(self) -> str:
        return str((self.object.get("metadata") or {}).get("resourceVersion") or "")


def api_client(*, vetted: VettedKubeconfig | None = None, in_cluster: bool = False) -> k8s.ApiClient:
    """A client from a vetted kubeconfig, or from the pod's service account.

    The Configuration is built here from the vetted fields; the client's kubeconfig loader (which runs
    exec plugins and reads files) is never used."""
    if in_cluster:
        configuration = k8s.Configuration()
        k8s_config.load_incluster_config(client_configuration=configuration)
        return k8s.ApiClient(configuration)
    if vetted is None:
        raise KubeError("no credentials for the cluster")
    configuration = k8s.Configuration(host=vetted.server)
    if vetted.token:
        configuration.api_key = {"authorization": vetted.token}
        configuration.api_key_prefix = {"authorization": "Bearer"}
    if vetted.ca_data:
        configuration.ca_cert_data = vetted.ca_data
    if vetted.client_certificate_data:
        configuration.cert_file = _private_file(vetted.client_certificate_data, suffix=".crt")
        configuration.key_file = _private_file(vetted.client_key_data, suffix=".key")
    if vetted.tls_server_name:
        configuration.tls_server_name = vetted.tls_server_name
    configuration.verify_ssl = True
    return k8s.ApiClient(configuration)


_PRIVATE_DIR: Path | None = None


def _private_file(content: str, *, suffix: str) -> str:
    """urllib3 reads a client certificate and key only from files: write each once (by content hash)
    into a directory only this process's user can read, removed at exit."""
    global _PRIVATE_DIR
    if _PRIVATE_DIR is None:
        _PRIVATE_DIR = Path(tempfile.mkdtemp(prefix="gpuplatform-tls-"))
        atexit.register(shutil.rmtree, _PRIVATE_DIR, True)
    path = _PRIVATE_DIR / (hashlib.sha256(content.encode()).hexdigest() + suffix)
    if not path.exists():
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(content)
    return str(path)


# Kinds an older server may not serve at all: a 404 on their list means "none", not a failure.
OPTIONAL_KINDS = frozenset({"devicetaintrules"})


# Where each kind is listed and watched (every namespace), as the generated API classes send it.
_PATHS = {
    "nodes": "/api/v1/nodes",
    "pods": "/api/v1/pods",
    "deviceclasses": "/apis/resource.k8s.io/v1/deviceclasses",
    "resourceslices": "/apis/resource.k8s.io/v1/resourceslices",
    "devicetaintrules": "/apis/resource.k8s.io/v1/devicetaintrules",
    "resourceclaims": "/apis/resource.k8s.io/v1/resourceclaims",
    "workloads": f"/apis/{KUEUE_GROUP}/{KUEUE_VERSION}/workloads",
}
# The order the generated methods put them in, so the URL is the same to the byte.
_QUERY_ORDER = ("allowWatchBookmarks", "continue", "limit", "resourceVersion", "timeoutSeconds", "watch")
_QUERY_NAMES = {
    "_continue": "continue",
    "allow_watch_bookmarks": "allowWatchBookmarks",
    "resource_version": "resourceVersion",
    "timeout_seconds": "timeoutSeconds",
}


def _list_function(api: k8s.ApiClient, kind: str) -> Callable[..., Any]:
    """The list (and watch) call of a kind, taking the generated method's keyword arguments.

    Sent through the client's own request path (``param_serialize``, ``call_api``: the same URL,
    headers, credentials and TLS) rather than the generated ``CoreV1Api``/``ResourceV1Api``: merely
    importing those modules took ~1.9 s of a cold sync (pydantic builds a validator for each of their
    thousands of methods), and each call validated its arguments again. Clients older than that
    request path (kubernetes < 34) take the generated methods."""
    if not hasattr(api, "param_serialize"):
        return _generated_list_function(api, kind)
    path = _PATHS[kind]

    def call(
        *, _request_timeout: Any = None, _preload_content: bool = False, watch: bool = False, **params: Any
    ) -> Any:
        if _preload_content:
            raise ValueError("lists and watches read the raw response")
        if watch:
            params["watch"] = True
        query = sorted(
            ((_QUERY_NAMES.get(name, name), value) for name, value in params.items() if value is not None),
            key=lambda pair: _QUERY_ORDER.index(pair[0]) if pair[0] in _QUERY_ORDER else len(_QUERY_ORDER),
        )
        request = api.param_serialize(
            method="GET",
            resource_path=path,
            query_params=query,
            header_params={"Accept": "application/json"},  # what the generated methods send, watch too
            auth_settings=["BearerToken"],
        )
        response = api.call_api(*request, _request_timeout=_request_timeout)
        if not 200 <= response.status <= 299:
            response.read()
            raise ApiException.from_response(http_resp=response, body=None, data=None)
        return response.response

    return call


def _generated_list_function(api: k8s.ApiClient, kind: str) -> Callable[..., Any]:
    core, resource = k8s.CoreV1Api(api), k8s.ResourceV1Api(api)
    functions: dict[str, Callable[..., Any]] = {
        "nodes": core.list_node,
        "pods": core.list_pod_for_all_namespaces,
        "deviceclasses": resource.list_device_class,
        "resourceslices": resource.list_resource_slice,
        "devicetaintrules": resource.list_device_taint_rule,
        "resourceclaims": resource.list_resource_claim_for_all_namespaces,
        "workloads": partial(
            k8s.CustomObjectsApi(api).list_custom_object_for_all_namespaces,
            KUEUE_GROUP,
            KUEUE_VERSION,
            "workloads",
        ),
    }
    return functions[kind]


def _error(exc: Exception) -> KubeError:
    if isinstance(exc, ApiException):
        retry_after = None
        headers = exc.headers or {}
        if headers.get("Retry-After"):
            try:
                retry_after = float(headers["Retry-After"])
            except ValueError:
                retry_after = None
        cls = Gone if exc.status == 410 else KubeError
        return cls(
            f"API server answered {exc.status}: {exc.reason}", status=exc.status, retry_after=retry_after
        )
    return KubeError(f"API server unreachable: {exc}")


def list_pages(
    api: k8s.ApiClient, *, kind: str, page_size: int, timeout_seconds: float = 60
) -> Iterator[ListPage]:
    """Page through a list with limit/continue. An expired continue token raises Gone (re-list)."""
    function = _list_function(api, kind)
    token: str | None = None
    while True:
        kwargs: dict[str, Any] = {"limit": page_size, "_preload_content": False}
        if token:
            kwargs["_continue"] = token
        try:
            response = function(_request_timeout=timeout_seconds, **kwargs)
            body = orjson.loads(response.data)
        except ApiException as exc:
            if exc.status == 404 and kind in OPTIONAL_KINDS:
                # Not served by this server (DeviceTaintRules before 1.37): nothing to read, no watch.
                yield ListPage(items=[], resource_version="", last=True)
                return
            raise _error(exc) from exc
        except (HTTPError, OSError) as exc:
            raise _error(exc) from exc
        metadata = body.get("metadata") or {}
        token = metadata.get("continue") or None
        yield ListPage(
            items=body.get("items") or [],
            resource_version=str(metadata.get("resourceVersion") or ""),
            last=token is None,
        )
        if token is None:
            return


def _lines(response: Any) -> Iterator[bytes]:
    """A watch stream's events, one a line, as bytes for orjson. Not the client's ``iter_resp_lines``:
    it copies the rest of its buffer after every line, quadratic in a chunk that holds a backlog."""
    rest = b""
    for segment in response.stream(amt=None, decode_content=False):
        *lines, rest = (rest + (segment.encode() if isinstance(segment, str) else segment)).split(b"\n")
        yield from (line for line in lines if line)


def watch_events(
    api: k8s.ApiClient, *, kind: str, resource_version: str, timeout_seconds: int = 300
) -> Iterator[WatchEvent]:
    """Watch from ``resource_version`` with bookmarks. Ends when the server closes the stream;
    raises Gone on 410 (as an HTTP status or an ERROR event), KubeError on other failures."""
    function = _list_function(api, kind)
    try:
        response = function(
            watch=True,
            resource_version=resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=timeout_seconds,
            _preload_content=False,
            _request_timeout=(10, timeout_seconds + 30),
        )
    except (ApiException, HTTPError, OSError) as exc:
        raise _error(exc) from exc
    try:
        for line in _lines(response):
            event = orjson.loads(line)
            if event.get("type") == "ERROR":
                status = (event.get("object") or {}).get("code")
                message = (event.get("object") or {}).get("message", "watch error")
                if status == 410:
                    raise Gone(message, status=410)
                raise KubeError(message, status=status)
            yield WatchEvent(type=event.get("type", ""), object=event.get("object") or {})
    except (ProtocolError, HTTPError, OSError) as exc:
        # A cut stream is normal life for a watch: the caller resumes from its last resourceVersion.
        raise KubeError(f"watch stream broken: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise KubeError(f"watch stream sent a partial event: {exc}") from exc
    finally:
        response.release_conn()


def apply_resource_quota(
    api: k8s.ApiClient, *, namespace: str, name: str, hard: dict[str, str], labels: dict[str, str]
) -> dict[str, Any]:
    """Server-side apply a ResourceQuota's ``spec.hard``; creates it when missing."""
    body = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"hard": hard},
    }
    return _apply(
        k8s.CoreV1Api(api).patch_namespaced_resource_quota, name=name, namespace=namespace, body=body
    )


def apply_resource_claim(
    api: k8s.ApiClient, *, namespace: str, name: str, device_class: str, count: int, labels: dict[str, str]
) -> dict[str, Any]:
    """Server-side apply a ResourceClaim asking for ``count`` devices of ``device_class``."""
    body = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": device_class,
                            "allocationMode": "ExactCount",
                            "count": count,
                        },
                    }
                ]
            }
        },
    }
    return _apply(
        k8s.ResourceV1Api(api).patch_namespaced_resource_claim, name=name, namespace=namespace, body=body
    )


def delete_resource_claim(api: k8s.ApiClient, *, namespace: str, name: str) -> bool:
    """Delete a ResourceClaim; False when it was already gone (deleting is idempotent)."""
    return _deleted(k8s.ResourceV1Api(api).delete_namespaced_resource_claim, name, namespace)


def _deleted(delete: Callable[..., Any], *args: str) -> bool:
    """Call a client's delete; False when the object was already gone (so deleting is idempotent)."""
    try:
        delete(*args, _preload_content=False)
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise _error(exc) from exc
    except (HTTPError, OSError) as exc:
        raise _error(exc) from exc
    return True


def _apply(
    function: Callable[..., Any], *, name: str, namespace: str, body: dict[str, Any]
) -> dict[str, Any]:
    try:
        response = function(
            name,
            namespace,
            body,
            field_manager=FIELD_MANAGER,
            force=True,
            _content_type=APPLY_PATCH,
            _preload_content=False,
        )
        result: dict[str, Any] = json.loads(response.data)
    except (ApiException, HTTPError, OSError) as exc:
        raise _error(exc) from exc
    return result


_ADMISSION_KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")


def _admission_functions(api: k8s.ApiClient, kind: str) -> tuple[Callable[..., Any], ...]:
    admission = k8s.AdmissionregistrationV1Api(api)
    if kind == "ValidatingAdmissionPolicy":
        return (
            admission.patch_validating_admission_policy,
            admission.list_validating_admission_policy,
            admission.delete_validating_admission_policy,
        )
    if kind == "ValidatingAdmissionPolicyBinding":
        return (
            admission.patch_validating_admission_policy_binding,
            admission.list_validating_admission_policy_binding,
            admission.delete_validating_admission_policy_binding,
        )
    raise ValueError(f"not an admission kind: {kind}")


def apply_admission_object(api: k8s.ApiClient, *, body: dict[str, Any]) -> dict[str, Any]:
    """Server-side apply a (cluster-scoped) ValidatingAdmissionPolicy or its binding."""
    patch = _admission_functions(api, body["kind"])[0]
    try:
        response = patch(
            body["metadata"]["name"],
            body,
            field_manager=FIELD_MANAGER,
            force=True,
            _content_type=APPLY_PATCH,
            _preload_content=False,
        )
        result: dict[str, Any] = json.loads(response.data)
    except (ApiException, HTTPError, OSError) as exc:
        raise _error(exc) from exc
    return result


def list_admission_objects(api: k8s.ApiClient, *, kind: str, label_selector: str) -> list[str]:
    """Names of the admission objects of ``kind`` carrying the label selector."""
    function = _admission_functions(api, kind)[1]
    try:
        response = function(label_selector=label_selector, _preload_content=False)
        body = json.loads(response.data)
    except (ApiException, HTTPError, OSError) as exc:
        raise _error(exc) from exc
    return sorted(str(item["metadata"]["name"]) for item in body.get("items") or [])


def delete_admission_object(api: k8s.ApiClient, *, kind: str, name: str) -> bool:
    """Delete one; False when it was already gone."""
    return _deleted(_admission_functions(api, kind)[2], name)


def delete_resource_quota(api: k8s.ApiClient, *, namespace: str, name: str) -> bool:
    """Delete a ResourceQuota; False when it was already gone."""
    return _deleted(k8s.CoreV1Api(api).delete_namespaced_resource_quota, name, namespace)


def apply_custom_object(
    api: k8s.ApiClient, *, body: dict[str, Any], plural: str, status: bool = False
) -> dict[str, Any]:
    """Server-side apply a custom object (cluster-scoped, or namespaced when its metadata names a
    namespace), forced; ``status`` applies to its status subresource."""
    group, version = str(body["apiVersion"]).split("/", 1)
    name = body["metadata"]["name"]
    namespace = body["metadata"].get("namespace")
    custom: Any = k8s.CustomObjectsApi(api)  # with _preload_content=False it answers raw
    if namespace:
        function = (
            custom.patch_namespaced_custom_object_status if status else custom.patch_namespaced_custom_object
        )
        args: tuple[Any, ...] = (group, version, namespace, plural, name, body)
    else:
        function = custom.patch_cluster_custom_object_status if status else custom.patch_cluster_custom_object
        args = (group, version, plural, name, body)
    try:
        response = function(
            *args,
            field_manager=FIELD_MANAGER,
            force=True,
            _content_type=APPLY_PATCH,
            _preload_content=False,
        )
        result: dict[str, Any] = json.loads(response.data)
    except (ApiException, HTTPError, OSError) as exc:
        raise _error(exc) from exc
    return result


def merge_patch_custom_status(
    api: k8s.ApiClient,
    *,
    group: str,
    version: str,
    plural: str,
    namespace: str,
    name: str,
    patch: dict[str, Any],
) -> dict[str, Any]:
    """A JSON merge patch of a namespaced custom object's status (lists are replaced whole)."""
    try:
        custom: Any = k8s.CustomObjectsApi(api)
        response = custom.patch_namespaced_custom_object_status(
            group, version, namespace, plural, name, patch, _content_type=MERGE_PATCH, _preload_content=False
        )
        result: dict[str, Any] = json.loads(response.data)
    except (ApiException, HTTPError, OSError) as exc:
        raise _error(exc) from exc
    return result


def list_custom_objects(
    api: k8s.ApiClient, *, group: str, version: str, plural: str, namespaced: bool, label_selector: str = ""
) -> list[dict[str, Any]]:
    """Every object of a custom kind (in all namespaces for a namespaced kind) with the label
    selector. A 404 (the CRD is not installed) is a KubeError with status 404."""
    custom: Any = k8s.CustomObjectsApi(api)  # with _preload_content=False it answers raw
    function = (
        custom.list_custom_object_for_all_namespaces if namespaced else custom.list_cluster_custom_object
    )
    try:
        response = function(group, version, plural, label_selector=label_selector, _preload_content=False)
        body = json.loads(response.data)
    except (ApiException, HTTPError, OSError) as exc:
        raise _error(exc) from exc
    return list(body.get("items") or [])


def delete_custom_object(
    api: k8s.ApiClient, *, group: str, version: str, plural: str, name: str, namespace: str = ""
) -> bool:
    """Delete one custom object; False when it was already gone."""
    custom: Any = k8s.CustomObjectsApi(api)  # with _preload_content=False it answers raw
    if namespace:
        return _deleted(custom.delete_namespaced_custom_object, group, version, namespace, plural, name)
    return _deleted(custom.delete_cluster_custom_object, group, version, plural, name)
