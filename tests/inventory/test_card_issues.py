"""A node advertising whole GPUs and MIG instances over the same cards: each card counted once, the
parse issue on the node page and in the cluster's health, and free units capped by the cards."""

from __future__ import annotations

import copy
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from inventory.capacity import pool_model_capacity, pool_resource_free
from inventory.models import Node, ParseIssueCount
from inventory.sync.runner import ClusterSync

pytestmark = pytest.mark.django_db


def _overlapping_node(store):
    template = next(n for n in store.list_readonly("nodes") if "h100-exclusive" in n["metadata"]["name"])
    node = copy.deepcopy(template)
    labels = {
        **node["metadata"]["labels"],
        "nvidia.com/gpu.count": "2",
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig-1g.10gb.count": "14",
        "gpuplatform.io/node-pool": "overlap",
    }
    node["metadata"] = {"name": "overlap-0", "labels": labels}
    resources = {"nvidia.com/gpu": "2", "nvidia.com/mig-1g.10gb": "14"}
    node["status"]["capacity"] = {**node["status"]["capacity"], **resources}
    node["status"]["allocatable"] = {**node["status"]["allocatable"], **resources}
    return node


def test_whole_and_mig_over_the_same_cards_count_once_and_are_flagged(
    kubesim_factory, register, mapped, cast
):
    sim = kubesim_factory(scenario="exclusive", nodes=3, seed=1)
    sim.store.create("nodes", _overlapping_node(sim.store), validate=False)
    cluster = register(sim)
    ClusterSync(cluster, page_size=50).full_sync()

    node = Node.objects.get(cluster=cluster, name="overlap-0")
    assert (node.gpu_count, node.card_basis) == (2, "reported")
    assert [issue["code"] for issue in node.parse_issues] == ["cards.whole_and_mig_overlap"]
    assert node.gpus.count() == 2
    issue = ParseIssueCount.objects.get(cluster=cluster, code="cards.whole_and_mig_overlap")
    assert (issue.count, issue.last_object) == (1, "overlap-0")

    # the pool (by product label) holds the one 8-card H100 exclusive node and these 2: 10 cards;
    # it advertises 8 + 2 whole GPUs + 14 x 1/7 = 12 GE, 2 GE more than there is
    pool = node.pool_id
    assert pool is not None
    (row,) = pool_model_capacity(pool_ids=[pool])[pool]
    held = row.allocated_ge
    assert (row.cards, row.physical_ge - held) == (10, row.free_ge)
    # (the stored GEs to 18 places: 14 x 0.142857142857142857 = 1.999999999999999998; to six,
    # 1.999998 was 2e-6 short)
    assert row.advertised_ge == Decimal(8) + 2 + Decimal("0.142857142857142857") * 14
    assert row.advertised_ge.quantize(Decimal("0.000001")) == 12
    # free units on the overlap node: 2 whole GPUs and 14 x 1g.10gb, each within its 2 cards
    free = pool_resource_free(pool_ids=[pool])[pool]
    assert free["nvidia.com/mig-1g.10gb"] == 14

    browser = Client()
    browser.force_login(cast.pat)
    page = browser.get(reverse("inventory-node", args=[node.pk])).content.decode()
    assert "cards.whole_and_mig_overlap" in page
    assert "2 cards, reported (label nvidia.com/gpu.count)" in page
    clusters = browser.get("/inventory/").content.decode()
    assert "cards.whole_and_mig_overlap" in clusters
