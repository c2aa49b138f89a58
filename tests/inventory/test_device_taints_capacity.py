"""A device tainted NoSchedule/NoExecute (KEP-5055) or a GPU HAMi cordons (hami.io/device-cordon) is
not free capacity: the pool's free GE, the units a flavor may admit on, and the overview drop by it and
say why; the cards count stays exact; lifting the taint gives the capacity back. A taint with an effect
the API does not know is read as None: flagged, never subtracted, never a crash."""

from __future__ import annotations

import copy
from decimal import Decimal

import pytest
from django.test import Client
from kubernetes import client as k8s

from inventory.capacity import pool_model_capacity
from inventory.models import Allocation, Gpu, Node, ShareableUnit
from inventory.selectors import pool_resource_capacity
from inventory.sync.runner import ClusterSync

pytestmark = pytest.mark.django_db

XID = {
    "key": "gpu.nvidia.com/xid",
    "value": "79",
    "effect": "NoSchedule",
    "timeAdded": "2026-12-03T18:00:00Z",
}


def _sync(cluster) -> None:
    ClusterSync(cluster, page_size=50).full_sync()


def _free_whole_gpu(cluster, pool_part: str) -> ShareableUnit:
    """A whole-GPU DRA device nobody holds, on a node of the named pool."""
    held = set(
        Allocation.objects.filter(cluster=cluster, ended_at__isnull=True).values_list("unit_id", flat=True)
    )
    unit = (
        ShareableUnit.objects.filter(
            cluster=cluster,
            kind="dra_device",
            counted=True,
            attributes__type="gpu",
            node__name__contains=pool_part,
        )
        .exclude(pk__in=held)
        .select_related("node", "resource_slice")
        .order_by("key")
        .first()
    )
    assert unit is not None, f"no free whole GPU in {pool_part}"
    return unit


def _set_taints(sim, slice_name: str, device: str, taints: list[dict] | None, *, newer: bool = False) -> None:
    """Rewrite one device's taints; ``newer``: as a newer server would store them (an effect 1.37's
    validation refuses, which only a later release could serve)."""
    obj = copy.deepcopy(sim.store.get("resourceslices", None, slice_name))
    for entry in obj["spec"]["devices"]:
        if entry["name"] == device:
            if taints is None:
                entry.pop("taints", None)
            else:
                entry["taints"] = taints
    if newer:
        sim.store.delete("resourceslices", None, slice_name)
        for key in ("resourceVersion", "uid", "creationTimestamp", "managedFields"):
            obj["metadata"].pop(key, None)
        sim.store.create("resourceslices", obj, validate=False)
        return
    sim.store.update("resourceslices", obj)


def _row(pool_id, model):
    return next(r for r in pool_model_capacity(pool_ids=[pool_id])[pool_id] if r.model_key == model)


def test_a_health_taint_takes_one_gpu_out_of_free_capacity_and_lifting_it_gives_it_back(
    kubesim_factory, register
):
    sim = kubesim_factory(scenario="dra", nodes=6, seed=2)
    cluster = register(sim)
    _sync(cluster)
    unit = _free_whole_gpu(cluster, "h100-dra")
    node, pool_id, model = unit.node, unit.node.pool_id, unit.model_key
    before = _row(pool_id, model)
    offered = pool_resource_capacity(pool_ids=[pool_id])[pool_id][unit.resource_name]
    assert before.unavailable_ge == 0 and before.unavailable == ()

    _set_taints(sim, unit.resource_slice.name, unit.device_name, [XID])
    _sync(cluster)
    after = _row(pool_id, model)
    assert after.cards == before.cards  # physical capacity is cards: a tainted card is still one
    assert after.unavailable_ge == Decimal(1)
    assert after.free_ge == before.free_ge - 1
    assert after.advertised_free_ge == before.advertised_free_ge - 1
    assert after.allocated_ge + after.unavailable_ge + after.free_ge == after.physical_ge
    assert after.unavailable == ("1 GPU tainted by gpu.nvidia.com/xid=79:NoSchedule",)
    assert pool_resource_capacity(pool_ids=[pool_id])[pool_id][unit.resource_name] == offered - 1
    stored = ShareableUnit.objects.get(cluster=cluster, device_name=unit.device_name, node=node)
    assert stored.unavailable == "tainted by gpu.nvidia.com/xid=79:NoSchedule"
    assert stored.taints[0]["key"] == "gpu.nvidia.com/xid" and stored.taints[0]["value"] == "79"
    # the health taint makes the card unhealthy for the GPU health SLI
    index = int(unit.device_name.split("-")[1])
    assert Gpu.objects.get(node=node, index=index).healthy is False

    # a second taint on the same device and a DeviceTaintRule-like duplicate count the card once
    _set_taints(
        sim,
        unit.resource_slice.name,
        unit.device_name,
        [XID, XID, {"key": "example.com/maintenance", "effect": "NoExecute"}],
    )
    _sync(cluster)
    twice = _row(pool_id, model)
    assert twice.unavailable_ge == Decimal(1) and twice.free_ge == after.free_ge

    _set_taints(sim, unit.resource_slice.name, unit.device_name, None)
    _sync(cluster)
    back = _row(pool_id, model)
    assert (back.free_ge, back.unavailable_ge, back.unavailable) == (before.free_ge, 0, ())
    assert pool_resource_capacity(pool_ids=[pool_id])[pool_id][unit.resource_name] == offered
    assert Gpu.objects.get(node=node, index=index).healthy is True


def test_an_informational_or_unknown_taint_leaves_free_capacity_and_is_flagged(
    kubesim_factory, register, cast
):
    sim = kubesim_factory(scenario="dra", nodes=6, seed=2)
    cluster = register(sim)
    _sync(cluster)
    unit = _free_whole_gpu(cluster, "h100-dra")
    before = _row(unit.node.pool_id, unit.model_key)
    _set_taints(
        sim,
        unit.resource_slice.name,
        unit.device_name,
        [
            {"key": "gpu.nvidia.com/xid", "value": "43", "effect": "None"},
            {"key": "example.com/odd", "value": "1", "effect": "Evict"},
        ],
        newer=True,
    )
    _sync(cluster)
    after = _row(unit.node.pool_id, unit.model_key)
    assert (after.free_ge, after.unavailable_ge) == (before.free_ge, 0)
    stored = ShareableUnit.objects.get(cluster=cluster, device_name=unit.device_name, node=unit.node)
    assert stored.unavailable == "" and [t["effect"] for t in stored.taints] == ["None", "Evict"]
    client = Client()
    client.force_login(cast.pat)
    page = client.get(f"/inventory/nodes/{unit.node.pk}/").content.decode()
    assert "example.com/odd=1:Evict" in page and "dra.taint.unknown_effect" in page
    assert "gpu.nvidia.com/xid=43:None" in page


def test_a_hami_cordoned_gpu_is_not_free_capacity(kubesim_factory, register):
    sim = kubesim_factory(scenario="hami", nodes=2, seed=1)
    cluster = register(sim)
    _sync(cluster)
    held = set(
        Allocation.objects.filter(cluster=cluster, ended_at__isnull=True).values_list("unit_id", flat=True)
    )
    unit = (
        ShareableUnit.objects.filter(cluster=cluster, kind="hami_gpu")
        .exclude(pk__in=held)
        .order_by("key")
        .first()
    )
    node, pool_id, model = unit.node, unit.node.pool_id, unit.model_key
    before = _row(pool_id, model)
    obj = copy.deepcopy(sim.store.get("nodes", None, node.name))
    obj["metadata"].setdefault("annotations", {})["hami.io/device-cordon"] = (
        f" {unit.device_uuid} ,,GPU-not-here"
    )
    sim.store.update("nodes", obj)
    _sync(cluster)
    after = _row(pool_id, model)
    assert after.cards == before.cards
    assert after.free_ge == before.free_ge - 1
    assert after.unavailable == ("1 GPU cordoned by HAMi (hami.io/device-cordon)",)
    node = Node.objects.get(pk=node.pk)
    assert [i["code"] for i in node.parse_issues if i["code"].startswith("hami.cordon")] == [
        "hami.cordon.unknown_gpu"
    ]

    obj = copy.deepcopy(sim.store.get("nodes", None, node.name))
    del obj["metadata"]["annotations"]["hami.io/device-cordon"]
    sim.store.update("nodes", obj)
    _sync(cluster)
    assert _row(pool_id, model).free_ge == before.free_ge


def test_a_device_taint_rule_taints_the_devices_it_names_until_it_is_deleted(kubesim_factory, register):
    sim = kubesim_factory(scenario="dra", nodes=6, seed=2)
    cluster = register(sim)
    _sync(cluster)
    unit = _free_whole_gpu(cluster, "h100-dra")
    pool_id, model = unit.node.pool_id, unit.model_key
    before = _row(pool_id, model)
    api = k8s.ResourceV1Api(sim.api_client())
    rule = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceTaintRule",
        "metadata": {"name": "rma-ticket-4411"},
        "spec": {
            "deviceSelector": {"driver": unit.driver, "pool": unit.pool_name, "device": unit.device_name},
            "taint": {"key": "example.com/rma", "value": "4411", "effect": "NoExecute"},
        },
    }
    api.create_device_taint_rule(rule)
    _sync(cluster)
    after = _row(pool_id, model)
    assert after.free_ge == before.free_ge - 1 and after.cards == before.cards
    assert after.unavailable == ("1 GPU tainted by example.com/rma=4411:NoExecute",)
    stored = ShareableUnit.objects.get(pk=unit.pk)
    assert stored.taints[0]["source"] == "DeviceTaintRule rma-ticket-4411"
    assert stored.taints[0]["time_added"]  # the server stamps timeAdded

    # the slice is republished (a new generation): its devices keep the rule's taint
    obj = copy.deepcopy(sim.store.get("resourceslices", None, unit.resource_slice.name))
    obj["spec"]["devices"][0].setdefault("attributes", {})["note"] = {"string": "republished"}
    sim.store.update("resourceslices", obj)
    _sync(cluster)
    assert _row(pool_id, model).free_ge == before.free_ge - 1

    # a rule whose effect a 1.37 server does not know is refused there: nothing changes
    bad = copy.deepcopy(rule)
    bad["metadata"]["name"] = "bad"
    bad["spec"]["taint"]["effect"] = "Evict"
    with pytest.raises(k8s.ApiException) as refused:
        api.create_device_taint_rule(bad)
    assert refused.value.status == 422

    api.delete_device_taint_rule("rma-ticket-4411")
    _sync(cluster)
    back = _row(pool_id, model)
    assert (back.free_ge, back.unavailable) == (before.free_ge, ())
