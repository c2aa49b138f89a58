"""Fault injection: latency, 5xx, 429, cut watches, forced 410s; from Python and over HTTP."""

from __future__ import annotations

import threading
import time

import pytest
import urllib3
from kubernetes import client, watch

from tests.kubesim.helpers import configmap, raw_call, status_of


def _no_retries(sim):
    api = sim.api_client()
    api.configuration.retries = False
    api.rest_client.pool_manager.connection_pool_kw["retries"] = urllib3.Retry(0, read=False, status=None)
    return api


def test_error_fault_answers_503_for_the_next_call_only(kubesim):
    core = client.CoreV1Api(_no_retries(kubesim))
    kubesim.faults.add("error", verbs="list", resources="pods", count=1, status=503)

    with pytest.raises(client.ApiException) as err:
        core.list_namespaced_pod("default")
    core.list_namespaced_pod("default")  # the fault is spent

    assert err.value.status == 503 and status_of(err.value)["reason"] == "ServiceUnavailable"


def test_500_fault(kubesim):
    core = client.CoreV1Api(_no_retries(kubesim))
    kubesim.faults.add("error", verbs=["create"], status=500, count=1)

    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_config_map("default", configmap("x"))

    assert err.value.status == 500 and status_of(err.value)["reason"] == "InternalError"


def test_throttle_fault_answers_429_with_retry_after(kubesim):
    core = client.CoreV1Api(_no_retries(kubesim))
    kubesim.faults.add("throttle", verbs="get", retry_after=7, count=1)

    with pytest.raises(client.ApiException) as err:
        core.read_namespace("default")

    status = status_of(err.value)
    assert err.value.status == 429 and err.value.headers["Retry-After"] == "7"
    assert status["reason"] == "TooManyRequests" and status["details"]["retryAfterSeconds"] == 7


def test_latency_fault_delays_matching_calls(kubesim):
    # Ordering, not wall-clock bounds: a call the fault does not match finishes while a matching one
    # is still held, and the matching one takes at least the fault's delay.
    core = client.CoreV1Api(kubesim.api_client())
    fault = kubesim.faults.add("latency", verbs="list", resources="namespaces", seconds=3.0)
    finished = threading.Event()
    elapsed: list[float] = []

    def slow_call() -> None:
        started = time.monotonic()
        core.list_namespace()
        elapsed.append(time.monotonic() - started)
        finished.set()

    slow = threading.Thread(target=slow_call)
    slow.start()
    core.list_namespaced_pod("default")
    held_while_fast_answered = not finished.is_set()
    slow.join()

    assert held_while_fast_answered
    assert fault.fired == 1 and elapsed[0] >= 3.0


def test_rate_zero_never_fires(kubesim):
    core = client.CoreV1Api(kubesim.api_client())
    kubesim.faults.add("error", rate=0.0)

    assert core.list_namespace().items


def test_cut_watch_drops_the_stream_after_k_events(kubesim):
    kubesim.store.bulk_load(configmap(f"cm-{i}") for i in range(10))
    core = client.CoreV1Api(kubesim.api_client())
    kubesim.faults.add("cut_watch", verbs="watch", after_events=3, count=1)

    resp = core.list_namespaced_config_map("default", watch=True, timeout_seconds=2, _preload_content=False)
    lines: list[bytes] = []

    def read_all():
        for chunk in resp.stream(amt=None, decode_content=False):
            lines.extend(line for line in chunk.split(b"\n") if line)

    with pytest.raises(urllib3.exceptions.ProtocolError):  # the stream ends without its last chunk
        read_all()

    assert len(lines) == 3


def test_expire_watch_fault_gives_410(kubesim):
    core = client.CoreV1Api(kubesim.api_client())
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    kubesim.faults.add("expire_watch", count=2)  # the client's Watch retries a 410 once by itself

    with pytest.raises(client.ApiException) as err:
        for _ in watch.Watch().stream(core.list_namespaced_config_map, "default", resource_version=rv):
            pass

    assert err.value.status == 410


def test_expire_continue_fault_gives_410(kubesim):
    kubesim.store.bulk_load(configmap(f"cm-{i}") for i in range(5))
    core = client.CoreV1Api(kubesim.api_client())
    token = core.list_namespaced_config_map("default", limit=2).metadata.var_continue
    kubesim.faults.add("expire_continue", count=1)

    with pytest.raises(client.ApiException) as err:
        core.list_namespaced_config_map("default", limit=2, _continue=token)

    assert err.value.status == 410 and status_of(err.value)["reason"] == "Expired"


def test_faults_over_http_admin_endpoint(kubesim):
    kube_api_client = _no_retries(kubesim)  # urllib3 would retry a 429 with Retry-After by itself
    code, fault, _ = raw_call(
        kube_api_client,
        "POST",
        "/kubesim/faults",
        {"kind": "throttle", "verbs": ["list"], "resources": ["nodes"], "retryAfter": 2, "count": 1},
    )
    listed = raw_call(kube_api_client, "GET", "/kubesim/faults")[1]
    status, _, headers = raw_call(kube_api_client, "GET", "/api/v1/nodes")
    cleared = raw_call(kube_api_client, "DELETE", "/kubesim/faults")[1]

    assert code == 201 and fault["kind"] == "throttle"
    assert [f["id"] for f in listed["faults"]] == [fault["id"]]
    assert status == 429 and headers["Retry-After"] == "2"
    assert cleared == {"faults": []}


def test_compact_over_http_trims_watch_history(kube_api_client):
    core = client.CoreV1Api(kube_api_client)
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", configmap("x"))

    raw_call(kube_api_client, "POST", "/kubesim/compact", {})

    with pytest.raises(client.ApiException) as err:
        for _ in watch.Watch().stream(
            core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=1
        ):
            pass
    assert err.value.status == 410
