"""Lists: pagination over a snapshot, expired continue tokens, label and field selectors."""

from __future__ import annotations

import time

import pytest
from kubernetes import client

from tests.kubesim.helpers import node, pod, status_of


def _pods(sim, n):
    sim.store.bulk_load(pod(f"p-{i:03d}", labels={"team": "alice" if i % 2 else "bob"}) for i in range(n))


def test_pagination_covers_every_object_exactly_once(kubesim):
    _pods(kubesim, 95)
    core = client.CoreV1Api(kubesim.api_client())
    first = core.list_pod_for_all_namespaces(limit=10)
    # writes between pages must not show up: pages are read at the first page's resourceVersion
    core.create_namespaced_pod("default", pod("p-late"))
    core.delete_namespaced_pod("p-050", "default")

    names: list[str] = []
    page, rvs = first, set()
    while True:
        names += [str(p.metadata.name) for p in page.items]
        rvs.add(page.metadata.resource_version)
        if not page.metadata.var_continue:
            break
        page = core.list_pod_for_all_namespaces(limit=10, _continue=page.metadata.var_continue)

    assert sorted(names) == [f"p-{i:03d}" for i in range(95)]
    assert len(names) == 95 and rvs == {first.metadata.resource_version}
    assert first.metadata.remaining_item_count == 85


def test_expired_continue_token_is_410(kubesim_factory):
    sim = kubesim_factory(continue_ttl=0.2)
    _pods(sim, 5)
    core = client.CoreV1Api(sim.api_client())
    token = core.list_namespaced_pod("default", limit=2).metadata.var_continue

    time.sleep(0.3)
    with pytest.raises(client.ApiException) as err:
        core.list_namespaced_pod("default", limit=2, _continue=token)

    status = status_of(err.value)
    assert err.value.status == 410 and status["reason"] == "Expired"
    assert status["message"].startswith("The provided continue parameter is too old")


def test_compaction_expires_continue_tokens_on_demand(kubesim):
    _pods(kubesim, 5)
    core = client.CoreV1Api(kubesim.api_client())
    token = core.list_namespaced_pod("default", limit=2).metadata.var_continue

    kubesim.compact()

    with pytest.raises(client.ApiException) as err:
        core.list_namespaced_pod("default", limit=2, _continue=token)
    assert err.value.status == 410


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("team=alice", {"p-001", "p-003"}),
        ("team==bob", {"p-000", "p-002"}),
        ("team!=alice", {"p-000", "p-002", "unlabelled"}),
        ("team in (alice,carol)", {"p-001", "p-003"}),
        ("team notin (alice)", {"p-000", "p-002", "unlabelled"}),
        ("team", {"p-000", "p-001", "p-002", "p-003"}),
        ("!team", {"unlabelled"}),
        ("team in (alice,bob),!gpu", {"p-000", "p-001", "p-002", "p-003"}),
    ],
)
def test_label_selectors(kubesim, selector, expected):
    _pods(kubesim, 4)
    kubesim.store.bulk_load([pod("unlabelled")])
    core = client.CoreV1Api(kubesim.api_client())

    names = {p.metadata.name for p in core.list_namespaced_pod("default", label_selector=selector).items}

    assert names == expected


def test_field_selectors(kubesim):
    kubesim.store.bulk_load([node("n1"), pod("on-n1", node="n1"), pod("pending")])
    core = client.CoreV1Api(kubesim.api_client())

    on_node = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=n1").items
    unscheduled = core.list_pod_for_all_namespaces(field_selector="spec.nodeName==").items
    not_n1 = core.list_pod_for_all_namespaces(field_selector="spec.nodeName!=n1,status.phase=Pending").items
    by_name = core.list_pod_for_all_namespaces(
        field_selector="metadata.name=on-n1,metadata.namespace=default"
    ).items

    assert [p.metadata.name for p in on_node] == ["on-n1"]
    assert [p.metadata.name for p in unscheduled] == ["pending"]
    assert [p.metadata.name for p in not_n1] == ["pending"]
    assert [p.metadata.name for p in by_name] == ["on-n1"]


def test_unsupported_field_selector_is_400(kube_api_client):
    core = client.CoreV1Api(kube_api_client)

    with pytest.raises(client.ApiException) as err:
        core.list_node(field_selector="spec.providerID=x")

    assert err.value.status == 400
    assert status_of(err.value)["message"] == "field label not supported: spec.providerID"


def test_list_kind_and_resource_version(kubesim):
    _pods(kubesim, 2)
    api = kubesim.api_client()
    core = client.CoreV1Api(api)

    pods = core.list_namespaced_pod("default")

    assert pods.kind == "PodList" and pods.api_version == "v1"
    assert int(pods.metadata.resource_version) == kubesim.store.resource_version
    assert client.ResourceV1Api(api).list_resource_slice().kind == "ResourceSliceList"
