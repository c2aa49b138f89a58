"""After a cold sync over kubesim the inventory equals the scenario's ground truth."""

from __future__ import annotations

from collections import Counter

import pytest

from inventory.models import Allocation, SyncState
from inventory.sync.runner import KIND_ORDER, ClusterSync
from tests.inventory import truth as t

pytestmark = pytest.mark.django_db(transaction=False)


@pytest.fixture
def synced(kubesim_factory, register, mapped):
    sim = kubesim_factory(scenario="mixed", nodes=20, seed=1)
    cluster = register(sim)
    report = ClusterSync(cluster, page_size=50).full_sync()
    return sim, cluster, report


def test_a_cold_sync_matches_the_scenario_truth(synced):
    sim, cluster, _ = synced
    truth = sim.truth
    assert t.gpus_by_product(cluster) == truth.gpus_by_model
    assert t.mig_instances(cluster) == truth.mig_instances
    assert t.shared_replicas(cluster) == truth.shared_replicas
    assert t.hami_devices(cluster) == {
        (d.node, d.uuid, d.split_count, d.memory_mib) for d in truth.hami_devices
    }
    assert t.dra_devices(cluster) == truth.dra_devices
    assert t.claims_by_state(cluster) == truth.claims_by_state
    assert t.open_allocations(cluster) == t.truth_allocations(truth)


def test_open_allocations_are_attributed_to_tenants_with_an_unassigned_bucket(synced, mapped):
    sim, cluster, _ = synced
    by_namespace = Counter(a.namespace for a in sim.truth.allocations if not a.unit.startswith("hami:"))
    rows = Allocation.objects.filter(cluster=cluster, ended_at__isnull=True)
    for namespace, tenant in mapped.items():
        held = rows.filter(namespace=namespace)
        assert set(held.values_list("tenant_id", flat=True)) == {tenant.pk if tenant else None}
    assert by_namespace["sandbox-unowned"] > 0
    assert rows.filter(tenant__isnull=True).exists()


def test_a_second_full_sync_finds_no_drift(synced):
    _, cluster, report = synced
    assert report.drift > 0
    again = ClusterSync(cluster, page_size=50).full_sync()
    assert again.changes == dict.fromkeys(again.changes, 0)
    cluster.refresh_from_db()
    assert cluster.last_drift == 0
    assert SyncState.objects.filter(cluster=cluster).count() == len(KIND_ORDER)  # Workloads only on kueue
