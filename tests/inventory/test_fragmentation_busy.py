"""Fragmentation sees exactly the MIG instances that are held, whatever the strategy: under MIG
single the holders ask for `nvidia.com/gpu`, under DRA they hold one published device (placed where
its slice says), under mixed they ask for `nvidia.com/mig-<profile>`. A page of pools is read with a
constant number of queries."""

from __future__ import annotations

from collections import Counter

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from inventory.models import NodePool, ShareableUnit
from inventory.selectors import pools_fragmentation, pools_geometries
from inventory.sync.runner import ClusterSync
from kubesim.scenarios import NAMES

pytestmark = pytest.mark.django_db(transaction=False)


def _held_mig_instances(truth, dra_mig_devices: set[str]) -> Counter:
    held: Counter = Counter()
    for allocation in truth.allocations:
        mig = allocation.unit.startswith("mig:")
        if mig or allocation.unit.removeprefix("dra:") in dra_mig_devices:
            held[allocation.node] += allocation.count
    return held


@pytest.mark.parametrize("scenario", [name for name in NAMES if name != "empty"])
def test_busy_instances_are_the_held_mig_devices(scenario, kubesim_factory, register):
    sim = kubesim_factory(scenario=scenario, nodes=12, seed=3)
    cluster = register(sim)
    ClusterSync(cluster, page_size=50).full_sync()
    dra_mig = {
        f"{driver}/{pool}/{device}"
        for driver, pool, device in ShareableUnit.objects.filter(cluster=cluster, kind="dra_device")
        .exclude(mig_profile="")
        .values_list("driver", "pool_name", "device_name")
    }
    held = _held_mig_instances(sim.truth, dra_mig)

    pool_ids = NodePool.objects.filter(cluster=cluster).values_list("pk", flat=True)
    busy = Counter(
        {
            node: sum(instance.in_use for gpu in gpus for instance in gpu.instances)
            for nodes in pools_geometries(pool_ids=pool_ids).values()
            for node, gpus in nodes.items()
        }
    )
    assert +busy == +held


def test_a_page_of_pools_costs_the_same_queries_as_one(kubesim_factory, register):
    sim = kubesim_factory(scenario="mixed", nodes=12, seed=3)
    cluster = register(sim)
    ClusterSync(cluster, page_size=50).full_sync()
    pools = list(NodePool.objects.filter(cluster=cluster).order_by("name"))
    assert len(pools) >= 3
    with CaptureQueriesContext(connection) as one:
        pools_fragmentation(pools=pools[:1])
    with CaptureQueriesContext(connection) as many:
        reports = pools_fragmentation(pools=pools)
    assert len(many) == len(one)
    assert set(reports) == {pool.pk for pool in pools}
