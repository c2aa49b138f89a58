"""One batch of watch events, applied by the writer: what the readers queue and what it makes of it."""

from __future__ import annotations

import copy

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from inventory import kube
from inventory.models import Allocation, SyncState
from inventory.sync.runner import ClusterSync, Queued, Relist

pytestmark = pytest.mark.django_db

EXCLUSIVE = "gpu-h100-exclusive-0000"


def _synced(kubesim_factory, register):
    sim = kubesim_factory(scenario="mixed", nodes=20, seed=1)
    syncer = ClusterSync(register(sim), page_size=100)
    syncer.full_sync()
    return sim, syncer


def _short_lived_pod(sim, name: str) -> tuple[dict, dict]:
    """A GPU pod on the exclusive node, created then deleted in the cluster: (as created, as deleted)."""
    template = next(
        p
        for p in sim.store.list_readonly("pods")
        if p["spec"].get("nodeName") == EXCLUSIVE and p["metadata"]["namespace"] in sim.truth.namespaces
    )
    pod = copy.deepcopy(template)
    pod["metadata"] = {"name": name, "namespace": template["metadata"]["namespace"]}
    pod["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/gpu": "1"},
        "requests": {"nvidia.com/gpu": "1"},
    }
    pod["status"] = {"phase": "Running", "startTime": "2026-12-03T09:00:00Z"}
    created = sim.store.create("pods", pod, validate=False)
    deleted = sim.store.delete("pods", created["metadata"]["namespace"], name)
    return created, deleted or created


def test_a_pod_that_starts_and_ends_within_one_batch_still_leaves_its_interval(
    kubesim_factory, register, mapped
):
    # given a synced cluster, and a pod that came and went between two batches of the writer
    sim, syncer = _synced(kubesim_factory, register)
    created, deleted = _short_lived_pod(sim, "blink-0001")
    uid = created["metadata"]["uid"]

    # when its two events are applied in one batch
    relist = syncer.apply_batch(
        [
            Queued("pods", 0, kube.WatchEvent("ADDED", created)),
            Queued("pods", 0, kube.WatchEvent("DELETED", deleted)),
        ]
    )

    # then nothing needs listing again, and the ledger holds its interval, opened and closed
    assert relist == set()
    rows = list(Allocation.objects.filter(cluster=syncer.cluster, holder_uid=uid))
    assert [(r.holder_name, r.resource_name, r.count) for r in rows] == [("blink-0001", "nvidia.com/gpu", 1)]
    assert rows[0].ended_at is not None
    assert rows[0].end_reason == "deleted"


def test_a_410_asks_for_a_list_and_its_kinds_events_of_the_batch_wait_for_it(
    kubesim_factory, register, mapped
):
    # given a synced cluster, and a pod whose watch then answered 410 Gone
    sim, syncer = _synced(kubesim_factory, register)
    created, _ = _short_lived_pod(sim, "blink-0002")

    # when the batch holds its event, then the reader's call to re-list
    relist = syncer.apply_batch(
        [
            Queued("pods", 0, kube.WatchEvent("ADDED", created)),
            Queued("pods", 0, Relist()),
        ]
    )

    # then the pods are to be listed again, and the event is left to that list (nothing written)
    assert relist == {"pods"}
    assert not Allocation.objects.filter(holder_uid=created["metadata"]["uid"]).exists()


def test_what_a_replaced_watch_queued_is_dropped_and_a_failure_shows_in_health(
    kubesim_factory, register, mapped
):
    # given a synced cluster whose pod watch was replaced (a new generation of readers)
    sim, syncer = _synced(kubesim_factory, register)
    created, _ = _short_lived_pod(sim, "blink-0003")
    syncer._generation["pods"] = 1

    # when the old reader's event and re-list arrive, and the new reader's failure
    relist = syncer.apply_batch(
        [
            Queued("pods", 0, kube.WatchEvent("ADDED", created)),
            Queued("pods", 0, Relist()),
            Queued("pods", 1, kube.KubeError("watch pods: connection reset")),
        ]
    )

    # then the old reader's items change nothing, and the failure is on the pods' sync state
    assert relist == set()
    assert not Allocation.objects.filter(holder_uid=created["metadata"]["uid"]).exists()
    state = SyncState.objects.get(cluster=syncer.cluster, kind="pods")
    assert state.last_error == "watch pods: connection reset"


def test_a_kueue_clusters_first_watch_batch_reads_no_units_again(kubesim_factory, register, mapped):
    # given a cluster enforcing by Kueue, cold synced: its last list is the Workloads'
    sim = kubesim_factory(scenario="mixed", nodes=20, seed=1, kueue=True)
    cluster = register(sim)
    cluster.enforcement_backend = "kueue"
    cluster.save(update_fields=["enforcement_backend"])
    syncer = ClusterSync(cluster, page_size=100)
    syncer.full_sync()
    assert syncer.kinds[-1] == "workloads"
    created, _ = _short_lived_pod(sim, "after-sync-0001")

    # when the watch's first batch brings a GPU pod on a node the pods' list already read
    with CaptureQueriesContext(connection) as queries:
        syncer.apply_batch([Queued("pods", 0, kube.WatchEvent("ADDED", created))])

    # then its interval is opened from the units read by the list, not read again
    assert not [q["sql"] for q in queries.captured_queries if "inventory_shareableunit" in q["sql"]]
    row = Allocation.objects.get(cluster=cluster, holder_uid=created["metadata"]["uid"], ended_at=None)
    assert (row.resource_name, row.count, row.node_name) == ("nvidia.com/gpu", 1, EXCLUSIVE)
    assert row.unit_id is None and row.model_key and row.ge == 1
