"""The inventory pages render for each role, with empty states, and hide what a role may not see."""

from __future__ import annotations

import pytest
from django.test import Client

from inventory.models import Allocation, Node, NodePool
from inventory.node_layout import node_layout
from inventory.sync.runner import ClusterSync

pytestmark = pytest.mark.django_db


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_empty_inventory_pages_say_so(cast):
    body = login(cast.pat).get("/inventory/").content.decode()
    assert "No cluster registered yet" in body
    assert "No allocation matches" in login(cast.pat).get("/inventory/allocations/").content.decode()
    assert "No node pool to analyse" in login(cast.pat).get("/inventory/fragmentation/").content.decode()


def test_pages_over_a_synced_cluster(cast, kubesim_factory, register, mapped):
    sim = kubesim_factory(scenario="mixed", nodes=20, seed=1)
    cluster = register(sim)
    ClusterSync(cluster).full_sync()
    pat = login(cast.pat)

    assert "sim" in pat.get("/inventory/").content.decode()
    pool = NodePool.objects.get(cluster=cluster, name="NVIDIA-H100-80GB-HBM3")
    page = pat.get(f"/inventory/pools/{pool.pk}/").content.decode()
    assert "capacity-chart" in page and "whole_gpu" in page
    node = Node.objects.get(name="gpu-a100-80-hami-0000")
    assert "GPU 0" in pat.get(f"/inventory/nodes/{node.pk}/").content.decode()
    # the fragmentation page reports the H100 pool with its cards and nodes, as the pool holds them
    cards = sum(Node.objects.filter(pool=pool).values_list("gpu_count", flat=True))
    nodes = Node.objects.filter(pool=pool).count()
    assert cards >= 8 and nodes >= 1
    fragmentation = pat.get("/inventory/fragmentation/?page_size=100").content.decode()
    assert f"sim/NVIDIA-H100-80GB-HBM3</strong> — {cards} GPUs on {nodes} nodes" in fragmentation
    assert "team-vision" in pat.get("/inventory/allocations/?tenant=vision").content.decode()

    dana = login(cast.dana)
    assert dana.get(f"/inventory/nodes/{node.pk}/").status_code == 404
    history = dana.get("/inventory/allocations/").content.decode()
    assert "team-vision" in history and "team-nlp" not in history and "sandbox-unowned" not in history
    assert "<h2>Clusters</h2>" not in dana.get("/inventory/").content.decode()


def test_the_node_page_puts_dra_devices_on_their_cards_coloured_by_holder(
    cast, kubesim_factory, register, mapped
):
    # given a synced cluster whose H100 DRA nodes publish one whole-GPU device per card
    sim = kubesim_factory(scenario="mixed", nodes=20, seed=1)
    cluster = register(sim)
    ClusterSync(cluster).full_sync()
    node = Node.objects.get(cluster=cluster, name="gpu-h100-dra-0000")

    # when the node is laid out
    layout = node_layout(node=node)

    # then each of the 8 cards carries exactly its device, none is left loose, and held devices name
    # the tenant of the claim's namespace (what the truth says is held there)
    assert [len(card.blocks) for card in layout.cards] == [1] * 8
    assert layout.loose == []
    held = {
        a.unit_key.split("/")[3].split("@")[0]: (
            mapped[a.namespace].slug if mapped[a.namespace] else "unassigned"
        )
        for a in Allocation.objects.filter(node=node, ended_at__isnull=True)
    }
    drawn = {f"gpu-{card.gpu.index}": card.blocks[0].tenant for card in layout.cards if card.blocks[0].tenant}
    assert drawn == held
    assert {tenant for tenant, _, _ in layout.legend} == set(held.values())
