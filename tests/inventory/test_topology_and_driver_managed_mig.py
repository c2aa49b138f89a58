"""The kubesim "dra-topology" scenario synced: nodes whose MIG the NVIDIA DRA driver owns (DynamicMIG:
partitionable MIG devices consuming per-card counters) are marked, and lose the mark when the driver
stops announcing them; each node's NVLink clique and topology labels are recorded; cards stay exact."""

from __future__ import annotations

import copy
from collections import defaultdict

import pytest

from inventory.models import Node
from inventory.sync.runner import ClusterSync
from policies.selectors import DRIVER_MANAGED_MIG, detect_sharing
from policies.services.sharing import PolicyInvalid, set_sharing_policy

pytestmark = pytest.mark.django_db

ZONE, RACK = "topology.kubernetes.io/zone", "topology.kubesim.io/rack"
DYNAMIC = "h200-dra-dynamic-mig"


@pytest.fixture
def synced(kubesim_factory, register, settings):
    settings.INVENTORY_TOPOLOGY_LABELS = [ZONE, RACK]
    sim = kubesim_factory(scenario="dra-topology", nodes=10, seed=5)
    cluster = register(sim)
    ClusterSync(cluster, page_size=50).full_sync()
    return sim, cluster


def test_dynamic_mig_nodes_are_marked_and_cards_stay_exact(synced):
    sim, cluster = synced
    nodes = {n.name: n for n in Node.objects.filter(cluster=cluster).select_related("pool")}
    managed = {name for name, n in nodes.items() if n.driver_managed_mig}
    assert managed == {name for name in nodes if DYNAMIC in name}
    assert len(managed) == 4  # 10 nodes x 0.4
    # Cards are physical cards, whatever the partitions announced: 8 per node, as kubesim built them.
    assert {name: n.gpu_count for name, n in nodes.items()} == {
        name: sim.truth.nodes[name].gpus for name in nodes
    }
    assert sum(n.gpu_count for n in nodes.values()) == 80


def test_the_policy_side_sees_driver_managed_mig(synced, cast):
    _, cluster = synced
    pool = Node.objects.filter(cluster=cluster, name__contains=DYNAMIC).first().pool
    detected = detect_sharing(pool_ids=[pool.pk])[pool.pk]
    assert (detected.mode, detected.label, detected.driver_managed_mig) == ("dra", DRIVER_MANAGED_MIG, 4)
    with pytest.raises(PolicyInvalid) as refused:
        set_sharing_policy(
            pool_id=pool.pk,
            actor=cast.pat,
            mode="mig",
            parameters={"strategy": "mixed", "geometry": {"H200": {"1g.18gb": 7}}},
        )
    assert [e["code"] for e in refused.value.errors] == ["policy.driver_managed_mig"]
    plain = Node.objects.filter(cluster=cluster, name__contains="h100-dra").first().pool
    other = detect_sharing(pool_ids=[plain.pk])[plain.pk]
    assert other.driver_managed_mig == 0 and DRIVER_MANAGED_MIG not in other.label


def test_the_mark_goes_with_the_slices_and_comes_back_with_them(synced):
    """Without DynamicMIG the driver's MIG devices consume no counters: the pure tests show those are
    not marked (tests/inventory_domain/test_mig_management.py)."""
    sim, cluster = synced
    name = Node.objects.filter(cluster=cluster, driver_managed_mig=True).order_by("name").first().name
    mine = [
        copy.deepcopy(s)
        for s in sim.store.list_readonly("resourceslices")
        if s["spec"].get("nodeName") == name
    ]
    for item in mine:
        sim.store.delete("resourceslices", None, item["metadata"]["name"])
    ClusterSync(cluster, page_size=50).full_sync()
    assert Node.objects.get(cluster=cluster, name=name).driver_managed_mig is False
    # The driver publishes again (a new generation): marked again.
    for item in mine:
        for key in ("resourceVersion", "uid", "creationTimestamp"):
            item["metadata"].pop(key, None)
        item["spec"]["pool"]["generation"] += 1
        sim.store.create("resourceslices", item)
    ClusterSync(cluster, page_size=50).full_sync()
    assert Node.objects.get(cluster=cluster, name=name).driver_managed_mig is True


def test_cliques_and_topology_labels_are_recorded_per_node(synced):
    sim, cluster = synced
    by_clique: dict[str, list[str]] = defaultdict(list)
    for node in Node.objects.filter(cluster=cluster).order_by("name"):
        obj = sim.store.get("nodes", None, node.name)
        labels = obj["metadata"]["labels"]
        assert node.nvlink_clique == labels.get("nvidia.com/gpu.clique", "")
        assert node.topology == {k: labels[k] for k in (ZONE, RACK) if k in labels}
        by_clique[node.nvlink_clique].append(node.name)
    cliques = {k: v for k, v in by_clique.items() if k}
    # Two pools with fabric, 4 nodes each, two nodes a clique; the plain DRA pool has none.
    assert sorted(len(v) for v in cliques.values()) == [2, 2, 2, 2]
    assert all("h100-dra-" in name for name in by_clique[""])
    # A label change moves a node to another clique on the next sync.
    name = by_clique[next(iter(cliques))][0]
    obj = copy.deepcopy(sim.store.get("nodes", None, name))
    obj["metadata"]["labels"]["nvidia.com/gpu.clique"] = "a9e3e4a1-5c1b-4f7c-9d5e-2b0c1f6d7e88.9"
    sim.store.update("nodes", obj)
    ClusterSync(cluster, page_size=50).full_sync()
    assert Node.objects.get(cluster=cluster, name=name).nvlink_clique.endswith(".9")


def test_the_api_exposes_cliques_on_nodes_and_per_pool(synced, cast, api):
    _, cluster = synced
    pat = api(cast.pat)
    node = Node.objects.filter(cluster=cluster, name__contains=DYNAMIC).order_by("name").first()
    listed = pat.get(f"/api/v1/nodes/?nvlink_clique={node.nvlink_clique}").json()["results"]
    assert sorted(n["name"] for n in listed) == sorted(
        Node.objects.filter(nvlink_clique=node.nvlink_clique).values_list("name", flat=True)
    )
    assert len(listed) == 2
    assert all(n["driver_managed_mig"] is True and n["topology"][RACK] for n in listed)
    assert {n["name"] for n in pat.get("/api/v1/nodes/?driver_managed_mig=true").json()["results"]} == set(
        Node.objects.filter(cluster=cluster, name__contains=DYNAMIC).values_list("name", flat=True)
    )
    pool = pat.get(f"/api/v1/node-pools/{node.pool_id}/").json()
    domain = node.nvlink_clique.rsplit(".", 1)[0]
    assert pool["nvlink_cliques"] == [
        {
            "nvlink_clique": f"{domain}.{n}",
            "nvlink_domain": domain,
            "clique_id": n,
            "nodes": 2,
            "cards": 16,
            "driver_managed_mig_nodes": 2,
        }
        for n in (0, 1)
    ]
    # The H100 pool (pools here are products) holds the NVLink nodes and, on no fabric, the DRA ones.
    h100 = Node.objects.filter(cluster=cluster, name__contains="h100-dra").first().pool_id
    cliques = pat.get(f"/api/v1/node-pools/{h100}/").json()["nvlink_cliques"]
    assert [(c["clique_id"], c["nodes"], c["cards"]) for c in cliques] == [
        (0, 2, 16),
        (1, 2, 16),
        (None, 2, 16),
    ]
    assert cliques[-1]["nvlink_clique"] is None and cliques[-1]["driver_managed_mig_nodes"] == 0


def test_the_pages_group_nodes_by_clique(synced, cast, client):
    _, cluster = synced
    client.force_login(cast.pat)
    node = Node.objects.filter(cluster=cluster, name__contains=DYNAMIC).order_by("name").first()
    h100 = Node.objects.filter(cluster=cluster, name__contains="h100-dra").first().pool
    pools = client.get("/inventory/").content.decode()
    assert f'data-testid="nvlink-{node.pool.name}">2 cliques, 4 nodes<' in pools
    assert f'data-testid="nvlink-{h100.name}">2 cliques, 4 nodes · 2 nodes on no fabric<' in pools
    page = client.get(f"/inventory/pools/{node.pool_id}/").content.decode()
    assert page.count('data-testid="clique"') == 2 and "(2 nodes)" in page
    assert page.index(node.nvlink_clique) < page.index(node.name)
    detail = client.get(f"/inventory/nodes/{node.pk}/").content.decode()
    assert node.nvlink_clique in detail and "driver-managed (DRA driver, DynamicMIG)" in detail


def test_a_node_stored_after_its_slices_is_marked(synced):
    """Slices unchanged since the last sync are not read again: a node row made after them (here: one
    the database lost) still gets the mark from the slices stored for it."""
    _, cluster = synced
    name = Node.objects.filter(cluster=cluster, driver_managed_mig=True).order_by("name").first().name
    Node.objects.filter(cluster=cluster, name=name).delete()
    ClusterSync(cluster, page_size=50).full_sync()
    assert Node.objects.get(cluster=cluster, name=name).driver_managed_mig is True
