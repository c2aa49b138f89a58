"""A node that only a DRA driver describes (no GFD labels, no extended resources): its cards are
the distinct cards behind its ResourceSlice devices (a MIG device counts on its parentUUID), reported
with source "ResourceSlice devices"; a node update keeps them, and they go when the slices go."""

from __future__ import annotations

import copy

import pytest

from inventory.models import Gpu, Node
from inventory.sync.runner import ClusterSync

pytestmark = pytest.mark.django_db

GFD_PREFIXES = (
    "nvidia.com/gpu.",
    "nvidia.com/mig",
    "nvidia.com/cuda",
    "nvidia.com/gfd",
    "nvidia.com/device-plugin",
)


def _strip_gfd(store, name: str) -> None:
    node = copy.deepcopy(store.get("nodes", None, name))
    node["metadata"]["labels"] = {
        k: v for k, v in node["metadata"]["labels"].items() if not k.startswith(GFD_PREFIXES)
    }
    store.update("nodes", node)


def _node_named(store, part: str) -> str:
    return next(n["metadata"]["name"] for n in store.list_readonly("nodes") if part in n["metadata"]["name"])


@pytest.mark.parametrize("pool", ["h100-dra", "a100-80-dra-mig", "h200-dra-partitionable"])
def test_cards_of_a_dra_only_node_come_from_its_slices(pool, kubesim_factory, register):
    sim = kubesim_factory(scenario="dra", nodes=6, seed=2)
    name = _node_named(sim.store, pool)
    cards = sim.truth.nodes[name].gpus
    _strip_gfd(sim.store, name)
    cluster = register(sim)
    ClusterSync(cluster, page_size=50).full_sync()

    node = Node.objects.get(cluster=cluster, name=name)
    assert (node.gpu_count, node.card_basis, node.card_source) == (cards, "reported", "ResourceSlice devices")
    stored = list(Gpu.objects.filter(node=node).order_by("index").values_list("index", "uuid"))
    assert [i for i, _ in stored] == list(range(cards))
    assert len({u for _, u in stored}) == cards and all(u.startswith("GPU-") for _, u in stored)

    # a label change on the node (a node event) keeps DRA's count and the same card rows
    ids = set(Gpu.objects.filter(node=node).values_list("pk", flat=True))
    obj = copy.deepcopy(sim.store.get("nodes", None, name))
    obj["metadata"]["labels"]["team"] = "vision"
    sim.store.update("nodes", obj)
    ClusterSync(cluster, page_size=50).full_sync()
    node.refresh_from_db()
    assert (node.gpu_count, node.card_source) == (cards, "ResourceSlice devices")
    assert set(Gpu.objects.filter(node=node).values_list("pk", flat=True)) == ids

    # the driver goes away: its slices with it, and the cards they counted
    for item in sim.store.list_readonly("resourceslices"):
        if item["spec"].get("nodeName") == name:
            sim.store.delete("resourceslices", None, item["metadata"]["name"])
    ClusterSync(cluster, page_size=50).full_sync()
    node.refresh_from_db()
    assert (node.gpu_count, node.card_basis, node.card_source) == (0, "", "")
    assert not Gpu.objects.filter(node=node).exists()


def test_labels_that_count_cards_win_over_slices(kubesim_factory, register):
    sim = kubesim_factory(scenario="dra", nodes=6, seed=2)
    cluster = register(sim)
    ClusterSync(cluster, page_size=50).full_sync()
    sources = set(Node.objects.filter(cluster=cluster, gpu_count__gt=0).values_list("card_source", flat=True))
    assert "ResourceSlice devices" not in sources
