"""Lists and watches skip the generated API classes (their import alone was ~2 s of a cold sync) and
build the request through the client's own path: the request must be the one the generated methods
send, for every kind, list page and watch alike."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
from kubernetes import client as k8s

from inventory import kube


class _Sent(Exception):
    pass


def _recorded(api: k8s.ApiClient, call: Any, **kwargs: Any) -> tuple[Any, ...]:
    """What ``call`` hands the REST layer (method, URL with query, headers), without sending it."""
    sent: list[tuple[Any, ...]] = []

    def request(method: str, url: str, headers: Any = None, **_: Any) -> Any:
        sent.append((method, url, dict(headers or {})))
        raise _Sent

    api.rest_client.request = request  # type: ignore[assignment]  # the client's, not ours
    with pytest.raises(_Sent):
        call(**kwargs)
    return sent[0]


def _api() -> k8s.ApiClient:
    configuration = k8s.Configuration(host="https://cluster.example:6443")
    configuration.api_key = {"authorization": "token-1"}
    configuration.api_key_prefix = {"authorization": "Bearer"}
    return k8s.ApiClient(configuration)


@pytest.mark.parametrize("kind", sorted(kube._PATHS))
@pytest.mark.parametrize(
    "kwargs",
    [
        {"limit": 500, "_preload_content": False, "_request_timeout": 60},
        {"limit": 500, "_continue": "eyJ2IjoxfQ==", "_preload_content": False, "_request_timeout": 60},
        {
            "watch": True,
            "resource_version": "12345",
            "allow_watch_bookmarks": True,
            "timeout_seconds": 60,
            "_preload_content": False,
            "_request_timeout": (10, 90),
        },
    ],
    ids=["first page", "next page", "watch"],
)
def test_a_list_or_watch_sends_what_the_generated_method_sends(kind: str, kwargs: dict[str, Any]) -> None:
    api = _api()
    assert hasattr(api, "param_serialize")  # the installed client has the request path used
    ours = _recorded(api, kube._list_function(api, kind), **kwargs)
    generated = _recorded(api, kube._generated_list_function(api, kind), **kwargs)
    method, url, headers = ours
    assert (method, url) == generated[:2]
    assert headers == generated[2]
    assert headers["authorization"] == "Bearer token-1"
    assert url.startswith(f"https://cluster.example:6443{kube._PATHS[kind]}?")


def test_the_workloads_path_is_kueues_version() -> None:
    api = _api()
    generated = partial(
        k8s.CustomObjectsApi(api).list_custom_object_for_all_namespaces,
        kube.KUEUE_GROUP,
        kube.KUEUE_VERSION,
        "workloads",
    )
    ours = _recorded(api, kube._list_function(api, "workloads"), limit=5, _preload_content=False)
    assert ours[:2] == _recorded(api, generated, limit=5, _preload_content=False)[:2]
