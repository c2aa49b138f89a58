"""A device that consumes a counter its pool does not declare (KEP-4815; since 1.35 the counters sit
in a slice of their own, so only the pool's whole generation can tell): the sync flags it on the
slice and the node page, once per version of the slice, and nothing crashes or counts twice."""

from __future__ import annotations

import copy

import pytest
from django.test import Client
from django.urls import reverse

from inventory.models import Node, ParseIssueCount, ResourceSlice, ShareableUnit
from inventory.sync.runner import ClusterSync

pytestmark = pytest.mark.django_db


def _issues(cluster):
    return dict(
        ParseIssueCount.objects.filter(
            cluster=cluster, code__startswith="dra.counters.undeclared"
        ).values_list("code", "count")
    )


def test_a_counter_the_pool_does_not_declare_is_flagged_once_on_the_slice_and_node(
    kubesim_factory, register, cast, api
):
    sim = kubesim_factory(scenario="dra", nodes=6, seed=2)
    cluster = register(sim)
    ClusterSync(cluster, page_size=50).full_sync()
    assert _issues(cluster) == {}  # the scenario's partitionable pools declare all they consume
    piece = (
        ResourceSlice.objects.filter(cluster=cluster, counters__has_key="consumes").order_by("name").first()
    )
    assert piece is not None and piece.node_name
    counted = ShareableUnit.objects.filter(cluster=cluster, counted=True).count()
    cards = Node.objects.get(cluster=cluster, name=piece.node_name).gpu_count

    original = copy.deepcopy(sim.store.get("resourceslices", None, piece.name))
    obj = copy.deepcopy(original)
    device = next(d for d in obj["spec"]["devices"] if d.get("consumesCounters"))
    device["consumesCounters"][0]["counters"]["nvlink-bandwidth"] = {"value": "1"}
    device["consumesCounters"].append({"counterSet": "no-such-set", "counters": {"x": {"value": "1"}}})
    sim.store.update("resourceslices", obj)
    ClusterSync(cluster, page_size=50).full_sync()

    assert _issues(cluster) == {"dra.counters.undeclared_counter": 1, "dra.counters.undeclared_set": 1}
    issue = ParseIssueCount.objects.get(cluster=cluster, code="dra.counters.undeclared_counter")
    assert issue.last_object == f"{piece.name} (node {piece.node_name})"
    assert issue.last_message == (
        f"{device['name']} consumes 'nvlink-bandwidth' of "
        f"{device['consumesCounters'][0]['counterSet']!r}, which declares no such counter"
    )
    # flagged, not fatal: the pool still counts, each device once, and the cards are the same
    assert ShareableUnit.objects.filter(cluster=cluster, counted=True).count() == counted
    assert Node.objects.get(cluster=cluster, name=piece.node_name).gpu_count == cards

    # a resync that finds the same slice notes nothing new
    ClusterSync(cluster, page_size=50).full_sync()
    assert _issues(cluster) == {"dra.counters.undeclared_counter": 1, "dra.counters.undeclared_set": 1}

    browser = Client()
    browser.force_login(cast.pat)
    node = Node.objects.get(cluster=cluster, name=piece.node_name)
    page = browser.get(reverse("inventory-node", args=[node.pk])).content.decode()
    assert "dra.counters.undeclared_counter" in page and "dra.counters.undeclared_set" in page
    assert f"{piece.name}: {device['name']}" in page
    assert "dra.counters.undeclared_counter" in browser.get("/inventory/").content.decode()

    # the node's API representation lists the same two, on the node and in the list's row for it
    client = api(cast.pat)
    detail = client.get(f"/api/v1/nodes/{node.pk}/").json()["slice_issues"]
    assert sorted((i["code"], i["severity"], i["source"]) for i in detail) == [
        ("dra.counters.undeclared_counter", "error", f"{piece.name}: {device['name']}"),
        ("dra.counters.undeclared_set", "error", f"{piece.name}: {device['name']}"),
    ]
    assert issue.last_message in {i["message"] for i in detail}
    listed = client.get(f"/api/v1/nodes/?page_size=50&cluster={cluster.name}").json()["results"]
    assert {row["name"]: len(row["slice_issues"]) for row in listed if row["slice_issues"]} == {node.name: 2}

    # the driver republishes the slice as it was: the issues leave the node page
    fixed = copy.deepcopy(sim.store.get("resourceslices", None, piece.name))
    fixed["spec"] = original["spec"]
    sim.store.update("resourceslices", fixed)
    ClusterSync(cluster, page_size=50).full_sync()
    page = browser.get(reverse("inventory-node", args=[node.pk])).content.decode()
    assert "dra.counters.undeclared" not in page
    assert client.get(f"/api/v1/nodes/{node.pk}/").json()["slice_issues"] == []
    assert ResourceSlice.objects.get(cluster=cluster, name=piece.name).counters.get("issues") in (None, [])
