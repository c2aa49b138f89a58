"""add_cluster, sync_inventory --once and the inventory.sync_cluster task, called directly."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from gpuplatform.audit.models import AuditEvent
from inventory.models import Allocation, Cluster
from inventory.services import claim_sync_lease
from inventory.tasks import sync_cluster_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def sim(kubesim_factory):
    return kubesim_factory(scenario="mixed", nodes=6, seed=3)


def test_add_cluster_then_sync_once(cast, sim):
    out = StringIO()
    call_command("add_cluster", "lab", "--kubeconfig", str(sim.kubeconfig_path), stdout=out)
    call_command("sync_inventory", "--cluster", "lab", "--once", stdout=out)

    cluster = Cluster.objects.get(name="lab")
    assert cluster.api_endpoint == sim.url
    assert AuditEvent.objects.filter(action="cluster.created", actor=cast.pat).exists()
    assert Allocation.objects.filter(cluster=cluster).count() > 0
    assert cluster.last_full_resync_at is not None


def test_add_cluster_refuses_a_taken_name(cast, sim):
    call_command("add_cluster", "lab", "--kubeconfig", str(sim.kubeconfig_path), stdout=StringIO())
    with pytest.raises(CommandError, match="cluster_name_taken"):
        call_command("add_cluster", "lab", "--kubeconfig", str(sim.kubeconfig_path), stdout=StringIO())


def test_the_task_is_idempotent_and_a_held_lease_skips_it(cast, sim, register):
    cluster = register(sim)

    first = sync_cluster_task(str(cluster.pk))
    second = sync_cluster_task(str(cluster.pk))
    assert first["drift"] > 0
    assert second["drift"] == 0
    assert sync_cluster_task.name == "inventory.sync_cluster"

    assert claim_sync_lease(cluster_id=cluster.pk, owner="someone-else", seconds=60)
    assert "skipped" in sync_cluster_task(str(cluster.pk))
