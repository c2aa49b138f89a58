"""One truth for capacity, over every kubesim scenario: the pools' physical capacity is the scenario's
cards, and the pool page, the node-pools API and fragmentation show the same figures, with
allocated + free = capacity on the physical and the advertised side."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from inventory.capacity import pool_model_capacity, pool_resource_free
from inventory.models import Node, NodePool
from inventory.selectors import pool_fragmentation
from inventory.sync.runner import ClusterSync
from kubesim.scenarios import NAMES

pytestmark = pytest.mark.django_db(transaction=False)


SIX = Decimal("0.000001")


@pytest.mark.parametrize("scenario", [name for name in NAMES if name != "empty"])  # empty has no truth
def test_pool_capacity_is_the_scenario_cards_and_every_view_agrees(
    scenario, kubesim_factory, register, mapped, cast, api
):
    sim = kubesim_factory(scenario=scenario, nodes=12, seed=3)
    cluster = register(sim)
    ClusterSync(cluster, page_size=50).full_sync()
    truth = sim.truth

    # every node's cards are the generator's, whatever the strategy (single: inferred from devices)
    stored = dict(Node.objects.filter(cluster=cluster, present=True).values_list("name", "gpu_count"))
    assert {name: stored.get(name) for name in truth.nodes} == {n: t.gpus for n, t in truth.nodes.items()}
    pool_of = dict(Node.objects.filter(cluster=cluster).values_list("name", "pool_id"))
    cards_by_pool: Counter = Counter()
    for name, node_truth in truth.nodes.items():
        cards_by_pool[pool_of[name]] += node_truth.gpus

    pools = list(NodePool.objects.filter(cluster=cluster))
    capacity = pool_model_capacity(pool_ids=[p.pk for p in pools])
    assert {pool: sum(r.cards for r in rows) for pool, rows in capacity.items()} == {
        p.pk: cards_by_pool[p.pk] for p in pools
    }
    assert sum(r.cards for rows in capacity.values() for r in rows) == truth.total_gpus

    browser = Client()
    browser.force_login(cast.pat)
    body = api(cast.pat).get("/api/v1/node-pools/", {"page_size": 100}).json()
    by_id = {row["id"]: row for row in body["results"]}
    free_units = pool_resource_free(pool_ids=[p.pk for p in pools])
    for pool in pools:
        rows = capacity[pool.pk]
        for row in rows:
            # allocated + free = capacity on both sides, and nothing is allocated beyond the cards
            # tainted and cordoned units (the device-health scenario's) are neither allocated nor free
            assert row.allocated_ge + row.unavailable_ge + row.free_ge == row.physical_ge
            assert (
                row.advertised_allocated_ge + row.advertised_unavailable_ge + row.advertised_free_ge
                == row.advertised_ge
            )
            assert Decimal(0) <= row.allocated_ge <= row.physical_ge
        api_rows = {r["model_key"]: r for r in by_id[str(pool.pk)]["capacity"]}
        # GE is stored to 18 places (exact fractions read back) and shown to six: views agree at six
        assert {
            m: (r["physical"]["cards"], Decimal(r["physical"]["free_ge"])) for m, r in api_rows.items()
        } == {r.model_key: (r.cards, r.free_ge.quantize(SIX)) for r in rows}
        fragmentation = pool_fragmentation(pool=pool)["by_model"]
        for row in rows:
            assert (
                fragmentation[row.model_key]["cards"],
                Decimal(fragmentation[row.model_key]["free_ge"]),
            ) == (
                row.cards,
                row.free_ge,
            )
        text = browser.get(reverse("inventory-pool", args=[pool.pk])).content.decode()
        for row in rows:
            cells = f'<td class="num">{row.cards:,}</td><td class="num">{row.physical_ge:,.2f}</td>'
            assert f"<td>{row.model_key}</td>{cells}" in text
        # a flavor never gets more free units than the cards can hold
        assert all(n >= 0 for n in free_units[pool.pk].values())
