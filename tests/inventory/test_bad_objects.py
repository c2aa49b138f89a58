"""Bad objects from the API are counted per cluster and never crash the sync or corrupt other rows."""

from __future__ import annotations

import copy

import pytest

from inventory.models import Node, ParseIssueCount
from inventory.sync.runner import ClusterSync
from tests.inventory import truth as t

pytestmark = pytest.mark.django_db


def _bad_objects(store):
    nodes = store.list_readonly("nodes")
    mixed = copy.deepcopy(next(n for n in nodes if "mig-balanced" in n["metadata"]["name"]))
    mixed["metadata"] = {
        "name": "bad-mig",
        "labels": {**mixed["metadata"]["labels"], "nvidia.com/mig-9g.999gb.count": "3"},
    }
    mixed["status"]["allocatable"] = {**mixed["status"]["allocatable"], "nvidia.com/mig-9g.999gb": "3"}
    hami = copy.deepcopy(next(n for n in nodes if "hami" in n["metadata"]["name"]))
    hami["metadata"] = {
        "name": "bad-hami",
        "labels": hami["metadata"]["labels"],
        "annotations": {"hami.io/node-nvidia-register": "GPU-x,10,notanumber,100,NVIDIA-X,0,true:garbage"},
    }
    quantity = copy.deepcopy(next(n for n in nodes if "exclusive" in n["metadata"]["name"]))
    quantity["metadata"] = {
        "name": "bad-quantity",
        "labels": {**quantity["metadata"]["labels"], "nvidia.com/gpu.count": "eight"},
    }
    quantity["status"]["capacity"] = {**quantity["status"]["capacity"], "nvidia.com/gpu": "8 GPUs"}
    bare = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bare"}}
    pod = copy.deepcopy(
        next(p for p in store.list_readonly("pods") if p["spec"].get("schedulerName") == "hami-scheduler")
    )
    pod["metadata"] = {
        "name": "bad-pod",
        "namespace": pod["metadata"]["namespace"],
        "annotations": {
            "hami.io/vgpu-devices-allocated": "GPU-1,NVIDIA,lots,30:;",
            "hami.io/bind-phase": "success",
        },
    }
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "two"}}
    return [("nodes", mixed), ("nodes", hami), ("nodes", quantity), ("nodes", bare), ("pods", pod)]


def test_bad_objects_are_counted_and_the_rest_of_the_inventory_is_intact(kubesim_factory, register, mapped):
    sim = kubesim_factory(scenario="mixed", nodes=20, seed=1)
    for resource, obj in _bad_objects(sim.store):
        sim.store.create(resource, obj, validate=False)
    cluster = register(sim)

    ClusterSync(cluster, page_size=7).full_sync()

    counted = dict(ParseIssueCount.objects.filter(cluster=cluster).values_list("code", "count"))
    assert counted, "no parse issue was counted"
    codes = set(counted)
    assert any(code.startswith("mig") for code in codes), codes
    assert any(code.startswith("hami") for code in codes), codes
    assert "pod.bad_quantity" in codes or any("quantity" in code for code in codes), codes
    assert (
        Node.objects.filter(cluster=cluster, name__in=["bad-mig", "bad-hami", "bad-quantity", "bare"]).count()
        == 4
    )
    good = set(sim.truth.nodes)
    assert Node.objects.filter(cluster=cluster, name__in=good).count() == len(good)
    expected = t.truth_allocations(sim.truth)
    assert t.open_allocations(cluster) == expected
    assert t.hami_devices(cluster) >= {
        (d.node, d.uuid, d.split_count, d.memory_mib) for d in sim.truth.hami_devices
    }


def test_a_resync_counts_issues_again_only_for_objects_that_changed(kubesim_factory, register, mapped):
    sim = kubesim_factory(scenario="mixed", nodes=20, seed=1)
    for resource, obj in _bad_objects(sim.store)[:1]:
        sim.store.create(resource, obj, validate=False)
    cluster = register(sim)
    ClusterSync(cluster).full_sync()
    first = dict(ParseIssueCount.objects.filter(cluster=cluster, kind="nodes").values_list("code", "count"))

    ClusterSync(cluster).full_sync()

    assert (
        dict(ParseIssueCount.objects.filter(cluster=cluster, kind="nodes").values_list("code", "count"))
        == first
    )
