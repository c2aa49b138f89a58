"""kubesim's "device-health" scenario as a 1.37 cluster shows it: a GPU its DRA driver tainted on a fatal
XID and a GPU HAMi cordons. The sync takes exactly those two cards out of free capacity, names why, keeps
the cards count exact, and gives the tainted card back when the driver lifts the taint."""

from __future__ import annotations

import copy
from decimal import Decimal

import pytest

from inventory.capacity import pool_model_capacity
from inventory.models import Gpu, Node, NodePool, ShareableUnit
from inventory.sync.runner import ClusterSync

pytestmark = pytest.mark.django_db


def _capacity(cluster):
    pools = list(NodePool.objects.filter(cluster=cluster))
    rows = pool_model_capacity(pool_ids=[p.pk for p in pools])
    # The register labels pools by GPU product: one pool per model here.
    return {r.model_key: r for p in pools for r in rows[p.pk]}


def test_the_tainted_and_the_cordoned_gpu_leave_free_capacity(kubesim_factory, register):
    sim = kubesim_factory(scenario="device-health", nodes=4, seed=1)
    ((tainted_node, device, label),) = sim.truth.tainted_devices
    ((cordoned_node, cordoned_uuid),) = sim.truth.cordoned_gpus
    cluster = register(sim)
    ClusterSync(cluster, page_size=50).full_sync()

    capacity = _capacity(cluster)
    assert sum(r.cards for r in capacity.values()) == sim.truth.total_gpus  # physical capacity is cards
    unavailable = {key: r.unavailable for key, r in capacity.items() if r.unavailable}
    assert unavailable == {
        "H100-80GB": (f"1 GPU tainted by {label}",),
        "A100-80GB": ("1 GPU cordoned by HAMi (hami.io/device-cordon)",),
    }
    for row in capacity.values():
        assert row.allocated_ge + row.unavailable_ge + row.free_ge == row.physical_ge
    assert {key: r.unavailable_ge for key, r in capacity.items() if r.unavailable} == {
        "H100-80GB": Decimal(1),
        "A100-80GB": Decimal(1),
    }
    cordoned = ShareableUnit.objects.get(node__name=cordoned_node, device_uuid=cordoned_uuid)
    assert cordoned.unavailable == "cordoned by HAMi (hami.io/device-cordon)"
    sick = Gpu.objects.filter(node__cluster=cluster, healthy=False)
    assert [(g.node.name, g.index) for g in sick] == [(tainted_node, int(device.split("-")[1]))]

    # the driver lifts the taint (the card recovered): the card is free and healthy again
    for item in sim.store.list_readonly("resourceslices"):
        if item["spec"].get("nodeName") == tainted_node and any(
            d.get("taints") for d in item["spec"]["devices"]
        ):
            obj = copy.deepcopy(item)
            for d in obj["spec"]["devices"]:
                d.pop("taints", None)
            sim.store.update("resourceslices", obj)
    ClusterSync(cluster, page_size=50).full_sync()
    after = _capacity(cluster)
    dra = after["H100-80GB"]
    assert (dra.unavailable_ge, dra.unavailable) == (0, ())
    assert dra.free_ge == capacity["H100-80GB"].free_ge + 1
    assert not Gpu.objects.filter(node__cluster=cluster, healthy=False).exists()
    assert Node.objects.get(cluster=cluster, name=cordoned_node).parse_issues == []
