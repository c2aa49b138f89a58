"""Watches: ordering from a list's resourceVersion, bookmarks, 410 past the history window, selectors."""

from __future__ import annotations

import threading
import time

import pytest
from kubernetes import client, watch

from tests.kubesim.helpers import configmap, pod


def _collect(core, rv, n, **kwargs):
    events = []
    for event in watch.Watch().stream(
        core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=3, **kwargs
    ):
        events.append(event)
        if len([e for e in events if e["type"] != "BOOKMARK"]) >= n:
            break
    return events


def test_watch_from_list_resource_version_sees_every_change_once_in_order(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    core.create_namespaced_config_map("default", configmap("before"))
    rv = core.list_namespaced_config_map("default").metadata.resource_version

    def writes():
        for i in range(20):
            core.create_namespaced_config_map("default", configmap(f"cm-{i}"))
        core.patch_namespaced_config_map(
            "cm-3", "default", {"data": {"x": "1"}}, _content_type="application/merge-patch+json"
        )
        core.delete_namespaced_config_map("cm-4", "default")

    thread = threading.Thread(target=writes)
    thread.start()
    events = _collect(core, rv, 22)
    thread.join()

    seen = [(e["type"], e["object"].metadata.name) for e in events]
    rvs = [int(e["object"].metadata.resource_version) for e in events]
    assert seen == [("ADDED", f"cm-{i}") for i in range(20)] + [("MODIFIED", "cm-3"), ("DELETED", "cm-4")]
    assert rvs == sorted(rvs) and len(set(rvs)) == len(rvs)


def test_watch_without_resource_version_starts_with_current_state(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    for name in ("a", "b"):
        core.create_namespaced_config_map("default", configmap(name))

    events = []
    for event in watch.Watch().stream(core.list_namespaced_config_map, "default", timeout_seconds=1):
        events.append((event["type"], event["object"].metadata.name))

    assert events == [("ADDED", "a"), ("ADDED", "b")]


def test_bookmarks_arrive_when_asked_for(kubesim_factory):
    sim = kubesim_factory(bookmark_interval=0.1)
    core = client.CoreV1Api(sim.api_client())
    rv = core.list_namespaced_config_map("default").metadata.resource_version

    types = [
        e["type"]
        for e in watch.Watch().stream(
            core.list_namespaced_config_map,
            "default",
            resource_version=rv,
            timeout_seconds=1,
            allow_watch_bookmarks=True,
        )
    ]
    without = [
        e["type"]
        for e in watch.Watch().stream(
            core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=1
        )
    ]

    assert types.count("BOOKMARK") >= 3 and set(types) == {"BOOKMARK"}
    assert without == []


def test_bookmark_object_has_only_kind_api_version_and_resource_version(kubesim_factory):
    sim = kubesim_factory(bookmark_interval=0.05)
    core = client.CoreV1Api(sim.api_client())

    resp = core.list_namespaced_pod(
        "default",
        watch=True,
        allow_watch_bookmarks=True,
        timeout_seconds=1,
        resource_version=str(sim.store.resource_version),
        _preload_content=False,
    )
    import json

    first = json.loads(resp.data.splitlines()[0])
    assert first == {
        "type": "BOOKMARK",
        "object": {
            "kind": "Pod",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": str(sim.store.resource_version)},
        },
    }


def test_watch_from_resource_version_older_than_history_is_410(kubesim_factory):
    sim = kubesim_factory(history_window=5)
    core = client.CoreV1Api(sim.api_client())
    old_rv = core.list_namespaced_config_map("default").metadata.resource_version
    for i in range(10):
        core.create_namespaced_config_map("default", configmap(f"cm-{i}"))

    with pytest.raises(client.ApiException) as err:
        for _ in watch.Watch().stream(
            core.list_namespaced_config_map, "default", resource_version=old_rv, timeout_seconds=1
        ):
            pass

    assert err.value.status == 410
    assert "Expired: too old resource version" in err.value.reason


def test_watch_error_event_is_a_410_status(kubesim):
    core = client.CoreV1Api(kubesim.api_client())
    core.create_namespaced_config_map("default", configmap("x"))
    kubesim.compact()

    resp = core.list_namespaced_config_map(
        "default", watch=True, resource_version="1", timeout_seconds=1, _preload_content=False
    )
    import json

    event = json.loads(resp.data.splitlines()[0])
    assert resp.status == 200
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"
    assert event["object"]["message"].startswith("too old resource version: 1 (")


def test_object_leaving_a_selector_is_deleted_for_that_watch(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    core.create_namespaced_pod("default", pod("worker", labels={"team": "alice"}))
    rv = core.list_namespaced_pod("default").metadata.resource_version

    core.patch_namespaced_pod(
        "worker",
        "default",
        {"metadata": {"labels": {"team": "bob"}}},
        _content_type="application/merge-patch+json",
    )
    core.patch_namespaced_pod(
        "worker",
        "default",
        {"metadata": {"labels": {"team": "alice"}}},
        _content_type="application/merge-patch+json",
    )
    events = []
    for event in watch.Watch().stream(
        core.list_namespaced_pod,
        "default",
        resource_version=rv,
        label_selector="team=alice",
        timeout_seconds=1,
    ):
        events.append((event["type"], event["object"].metadata.labels["team"]))

    assert events == [("DELETED", "alice"), ("ADDED", "alice")]


def test_watch_times_out_when_asked(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    started = time.monotonic()

    events = list(
        watch.Watch().stream(core.list_namespaced_pod, "default", resource_version="1", timeout_seconds=1)
    )

    # The stream ended by itself (no upper wall-clock bound: a loaded machine is slow, not wrong),
    # and not before the server's timeout.
    assert events == []
    assert time.monotonic() - started >= 1.0
