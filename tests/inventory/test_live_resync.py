"""A periodic resync with the watches running: events reach the rows between the resync's pages,
a stale list entry never undoes what the watch applied, and the resync's drift is only its own."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from inventory.models import Allocation, Cluster, SyncState
from inventory.sync import live_resync
from inventory.sync.runner import ClusterSync, Relist
from kubesim import Sim
from tests.inventory import truth as t
from tests.inventory.factories import running_gpu_pod

pytestmark = pytest.mark.django_db(transaction=True)

EXCLUSIVE = "gpu-h100-exclusive-0000"


def _wait_for(predicate: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _queued_pod_names(syncer: ClusterSync) -> set[str]:
    """Names of the pods whose events the watch has queued and the writer not yet applied."""
    names = set()
    for queued in list(syncer._queue.queue):
        item = queued.item
        if queued.kind == "pods" and hasattr(item, "object"):
            names.add(str((item.object.get("metadata") or {}).get("name")))
    return names


def _applied(syncer: ClusterSync) -> bool:
    """Apply what the watches queued (the test plays the watch loop between resync steps)."""
    syncer.apply_queued()
    return True


def _open(cluster: Cluster, name: str) -> bool:
    return Allocation.objects.filter(
        cluster=cluster, holder_kind="Pod", holder_name=name, ended_at__isnull=True
    ).exists()


def _watched(sim: Sim, cluster: Cluster) -> ClusterSync:
    """A cold-synced cluster whose watches run, listed in pages of 5 (dozens of pages of pods)."""
    syncer = ClusterSync(cluster, page_size=5)
    syncer.full_sync()
    syncer.start_watches()
    return syncer


def _last_listed_holder(sim: Sim) -> dict[str, Any]:
    """The GPU pod that the list of pods reaches last: its entry is on the list's last pages."""
    holders = {(a.namespace, a.name) for a in sim.truth.allocations if a.holder_kind == "Pod"}
    pods = [
        p
        for p in sim.store.list_readonly("pods")
        if (p["metadata"]["namespace"], p["metadata"]["name"]) in holders
    ]
    return pods[-1]


def test_pod_events_during_a_resync_are_committed_before_it_ends_and_survive_its_stale_entries(
    kubesim_factory, register, mapped
):
    # given a watched cluster, and a resync stepped page by page
    sim = kubesim_factory(scenario="mixed", nodes=20, seed=1, bookmark_interval=0.5)
    cluster = register(sim)
    syncer = _watched(sim, cluster)
    deleted = _last_listed_holder(sim)
    finished = next(
        p
        for p in sim.store.list_readonly("pods")
        if p["spec"].get("nodeName") == EXCLUSIVE
        and p["metadata"]["name"] != deleted["metadata"]["name"]
        and _open(cluster, p["metadata"]["name"])
    )
    created = running_gpu_pod(finished, "created-during-resync", node=EXCLUSIVE)
    seen_mid_resync: dict[str, bool] = {}

    def step(kind: str, number: int) -> None:
        if kind != "pods":
            return
        if number == 0:
            # when, once the pods' snapshot is taken, one pod is created, one deleted, one finishes
            sim.store.create("pods", copy.deepcopy(created), validate=False)
            sim.store.delete("pods", deleted["metadata"]["namespace"], deleted["metadata"]["name"])
            done = copy.deepcopy(
                sim.store.get("pods", finished["metadata"]["namespace"], finished["metadata"]["name"])
            )
            done["status"]["phase"] = "Succeeded"
            sim.store.update("pods", done, subresource="status")
            names = {"created-during-resync", deleted["metadata"]["name"], finished["metadata"]["name"]}
            assert _wait_for(lambda: names <= _queued_pod_names(syncer))
        elif number == 1:
            seen_mid_resync.update(
                created=_open(cluster, "created-during-resync"),
                deleted=_open(cluster, deleted["metadata"]["name"]),
                finished=_open(cluster, finished["metadata"]["name"]),
            )

    try:
        report = syncer.resync(on_page=step)
    finally:
        syncer.stop_event.set()
        connection.close()

    # then the watch's changes were committed between the resync's pages, before it ended
    assert seen_mid_resync == {"created": True, "deleted": False, "finished": False}
    # and the resync's stale entries neither reopened the deleted pod nor closed the created one
    assert _open(cluster, "created-during-resync")
    assert not _open(cluster, deleted["metadata"]["name"])
    assert not _open(cluster, finished["metadata"]["name"])
    assert Allocation.objects.filter(cluster=cluster, holder_name=deleted["metadata"]["name"]).count() == 1
    # and what the watch applied is not the resync's drift
    assert report.drift == 0, report.changes
    cluster.refresh_from_db()
    assert cluster.last_drift == 0


@pytest.mark.parametrize("part", [None, 2], ids=["parts-as-shipped", "key-reads-and-closes-in-parts-of-2"])
def test_a_resync_through_watched_churn_leaves_the_ledger_equal_to_the_cluster(
    kubesim_factory, register, mapped, monkeypatch, part
):
    # given a watched cluster whose pods come and go while a stepped resync lists every kind
    # (and, in the second case, the lists' key sets read and their vanished closed two at a time,
    # the watches' events applied between each two)
    if part is not None:
        monkeypatch.setattr(live_resync, "READ_PART", part)
        monkeypatch.setattr(live_resync, "CLOSE_PART", part)
        monkeypatch.setattr(live_resync, "DEVICE_PART", part)
    sim = kubesim_factory(scenario="mixed", nodes=20, seed=1, bookmark_interval=0.5)
    cluster = register(sim)
    syncer = _watched(sim, cluster)
    expected = t.truth_allocations(sim.truth)
    template = next(p for p in sim.store.list_readonly("pods") if p["spec"].get("nodeName") == EXCLUSIVE)
    namespace = template["metadata"]["namespace"]
    created: list[str] = []

    def step(kind: str, number: int) -> None:
        # a pod created at every other page, every third one deleted at the next such page
        if number % 2:
            return
        if len(created) % 3 == 2:
            sim.store.delete("pods", namespace, created[-1])
            del expected[("Pod", namespace, created[-1], "nvidia.com/gpu", 1)]
        name = f"churn-{kind}-{number}"
        sim.store.create("pods", running_gpu_pod(template, name, node=EXCLUSIVE), validate=False)
        created.append(name)
        expected[("Pod", namespace, name, "nvidia.com/gpu", 1)] += 1

    try:
        report = syncer.resync(on_page=step)
        # then the ledger converges on the cluster, with no drift counted for the watch's changes
        assert _wait_for(lambda: _applied(syncer) and t.open_allocations(cluster) == expected)
    finally:
        syncer.stop_event.set()
        connection.close()
    assert len(created) > 10
    assert report.drift == 0, report.changes
    # and a cold resync of the same state finds nothing to repair
    assert ClusterSync(cluster, page_size=50).full_sync(record_drift=True).drift == 0


def _relist_queued(syncer: ClusterSync, kind: str) -> bool:
    return any(q.kind == kind and isinstance(q.item, Relist) for q in list(syncer._queue.queue))


def test_a_410_queued_before_a_resync_lists_that_kind_is_served_by_its_list(
    kubesim_factory, register, mapped
):
    # given a watched cluster whose pods watch answered 410 just before a resync
    sim = kubesim_factory(scenario="mixed", nodes=20, seed=1, bookmark_interval=0.5)
    cluster = register(sim)
    syncer = _watched(sim, cluster)
    relists_before = SyncState.objects.get(cluster=cluster, kind="pods").relists
    sim.faults.add("expire_watch", verbs="watch", resources="pods", count=1)
    sim.store.close_watches("pods")
    assert _wait_for(lambda: _relist_queued(syncer, "pods"))
    template = next(p for p in sim.store.list_readonly("pods") if p["spec"].get("nodeName") == EXCLUSIVE)
    try:
        # when the resync runs
        report = syncer.resync()
        # then the pods were listed once, by the resync, and their new watch delivers what follows
        assert SyncState.objects.get(cluster=cluster, kind="pods").relists == relists_before + 1
        assert report.drift == 0, report.changes
        sim.store.create("pods", running_gpu_pod(template, "after-the-410", node=EXCLUSIVE), validate=False)
        assert _wait_for(lambda: _applied(syncer) and _open(cluster, "after-the-410"))
    finally:
        syncer.stop_event.set()
        connection.close()


def test_a_410_while_a_resync_lists_that_kind_restarts_its_watch_from_that_list(
    kubesim_factory, register, mapped
):
    # given a watched cluster, and a resync stepped page by page
    sim = kubesim_factory(scenario="mixed", nodes=20, seed=1, bookmark_interval=0.5)
    cluster = register(sim)
    syncer = _watched(sim, cluster)
    template = next(p for p in sim.store.list_readonly("pods") if p["spec"].get("nodeName") == EXCLUSIVE)
    relists_before = SyncState.objects.get(cluster=cluster, kind="pods").relists

    def step(kind: str, number: int) -> None:
        if (kind, number) == ("pods", 0):
            # when, once the pods' snapshot is taken, a pod is created and the pods watch is told 410
            beside = running_gpu_pod(template, "beside-the-410", node=EXCLUSIVE)
            sim.store.create("pods", beside, validate=False)
            sim.faults.add("expire_watch", verbs="watch", resources="pods", count=1)
            sim.store.close_watches("pods")
            assert _wait_for(lambda: _relist_queued(syncer, "pods"))

    try:
        syncer.resync(on_page=step)
        # then the kind's watch restarts from the list (the snapshot and a watch from it are complete)
        # and the pod created past the snapshot reaches the ledger
        assert SyncState.objects.get(cluster=cluster, kind="pods").relists == relists_before + 1
        assert _wait_for(lambda: _applied(syncer) and _open(cluster, "beside-the-410"))
        sim.store.create("pods", running_gpu_pod(template, "after-the-410", node=EXCLUSIVE), validate=False)
        assert _wait_for(lambda: _applied(syncer) and _open(cluster, "after-the-410"))
    finally:
        syncer.stop_event.set()
        connection.close()


def test_the_end_of_a_resyncs_list_applies_watch_events_between_its_parts_and_closes_what_vanished(
    kubesim_factory, register, mapped, monkeypatch
):
    # given a watched cluster whose ledger holds six pods the cluster no longer has (missed deletes),
    # and a list's end read and closed in parts of two keys
    monkeypatch.setattr(live_resync, "READ_PART", 2)
    monkeypatch.setattr(live_resync, "CLOSE_PART", 2)
    sim = kubesim_factory(scenario="mixed", nodes=20, seed=1, bookmark_interval=0.5)
    cluster = register(sim)
    syncer = _watched(sim, cluster)
    vanished = [f"vanished-{n}" for n in range(6)]
    row = Allocation.objects.filter(cluster=cluster, holder_kind="Pod", ended_at__isnull=True).first()
    assert row is not None
    for name in vanished:
        row.pk, row.holder_uid, row.holder_name = None, f"uid-{name}", name
        row.save(force_insert=True)
    template = next(p for p in sim.store.list_readonly("pods") if p["spec"].get("nodeName") == EXCLUSIVE)
    pod_pages = -(-len(sim.store.list_readonly("pods")) // 5)
    created: list[str] = []
    # at each drain of the watches' queue while the pods' list ends: how many vanished pods are open
    still_open: list[int] = []

    def create_next() -> None:
        name = f"created-at-the-end-{len(created)}"
        sim.store.create("pods", running_gpu_pod(template, name, node=EXCLUSIVE), validate=False)
        created.append(name)
        assert _wait_for(lambda: name in _queued_pod_names(syncer))

    def step(kind: str, number: int) -> None:
        if (kind, number) == ("pods", pod_pages - 1):
            create_next()  # when, from the list's last page on, a pod is created before each drain

    def drained(events: int) -> None:
        if created and syncer._live is not None and syncer._live.kind == "pods":
            still_open.append(sum(_open(cluster, name) for name in vanished))
            if len(created) < 200:
                create_next()

    syncer._on_batch = drained
    try:
        report = syncer.resync(on_page=step)
        assert _wait_for(lambda: _applied(syncer) and all(_open(cluster, name) for name in created))
    finally:
        syncer.stop_event.set()
        connection.close()

    # then the watch's events were committed between the parts that closed the vanished pods
    assert still_open[0] == len(vanished)
    assert any(0 < count < len(vanished) for count in still_open), still_open
    # and every vanished pod was closed, counted as the resync's drift as a whole list's end counts it,
    # none of the pods the watch created meanwhile
    assert not any(_open(cluster, name) for name in vanished)
    assert report.changes["pods"] == len(vanished), report.changes


def test_a_resync_lists_resource_slices_in_smaller_pages_than_the_cold_sync(
    kubesim_factory, register, mapped, monkeypatch
):
    # given a watched cluster listed in pages of 5, and a live list's slices in pages of 2
    monkeypatch.setattr(live_resync, "SLICE_PAGE", 2)
    sim = kubesim_factory(scenario="mixed", nodes=12, seed=1)
    cluster = register(sim)
    syncer = _watched(sim, cluster)
    slices = len(sim.store.list_readonly("resourceslices"))
    assert slices > 5
    pages: dict[str, int] = {}

    def count(kind: str, number: int) -> None:
        pages[kind] = number + 1

    try:
        # when the periodic resync lists every kind
        report = syncer.resync(on_page=count)
    finally:
        syncer.stop_event.set()
        connection.close()
    # then its slices came two a page and every other kind five, with nothing to repair
    assert pages["resourceslices"] == -(-slices // 2)
    assert pages["nodes"] == -(-len(sim.store.list_readonly("nodes")) // 5)
    assert report.drift == 0, report.changes
