"""The inventory pages render for each role, with empty states, and hide what a role may not see."""

from __future__ import annotations

import pytest
from django.test import Client

from inventory.models import Node, NodePool
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
    assert pat.get("/inventory/fragmentation/").status_code == 200
    assert "team-vision" in pat.get("/inventory/allocations/?tenant=vision").content.decode()

    dana = login(cast.dana)
    assert dana.get(f"/inventory/nodes/{node.pk}/").status_code == 404
    history = dana.get("/inventory/allocations/").content.decode()
    assert "team-vision" in history and "team-nlp" not in history and "sandbox-unowned" not in history
    assert "<h2>Clusters</h2>" not in dana.get("/inventory/").content.decode()
