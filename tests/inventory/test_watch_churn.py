"""Watching through churn and faults: the inventory stays equal to the cluster, a full resync finds
no drift, and the ledger neither loses nor duplicates an interval."""

from __future__ import annotations

import copy
import random
import threading
import time
from collections import Counter, defaultdict

import pytest
from django.db import connection

from inventory.models import Allocation
from inventory.sync.runner import ClusterSync
from tests.inventory import truth as t
from tests.inventory.factories import running_gpu_pod

pytestmark = pytest.mark.django_db(transaction=True)

EXCLUSIVE = "gpu-h100-exclusive-0000"


def _run(syncer: ClusterSync) -> None:
    try:
        syncer.run(resync_seconds=3600)
    finally:
        connection.close()


def _wait_for(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


def test_churn_with_cut_watches_and_forced_410s_keeps_the_inventory_and_the_ledger_exact(
    kubesim_factory, register, mapped
):
    # given a synced cluster being watched, with watch faults injected
    sim = kubesim_factory(scenario="mixed", nodes=20, seed=1, bookmark_interval=0.5)
    cluster = register(sim)
    syncer = ClusterSync(cluster, page_size=100)
    thread = threading.Thread(target=_run, args=(syncer,), daemon=True)
    thread.start()
    expected = t.truth_allocations(sim.truth)
    assert _wait_for(lambda: t.open_allocations(cluster) == expected)
    cut = sim.faults.add("cut_watch", verbs="watch", resources="pods", after_events=3, count=4)
    expire = sim.faults.add("expire_watch", verbs="watch", resources=["pods", "resourceclaims"], count=3)
    sim.store.close_watches()  # faults apply to watch requests: make the readers reconnect now

    # when pods come and go at random
    rng = random.Random(7)
    store = sim.store
    holders = sorted({(a.namespace, a.name) for a in sim.truth.allocations if a.holder_kind == "Pod"})
    template = next(
        p
        for p in store.list_readonly("pods")
        if p["spec"].get("nodeName") == EXCLUSIVE and p["metadata"]["namespace"] in sim.truth.namespaces
    )
    ended: dict[tuple[str, str], str] = {}
    created: list[tuple[str, str]] = []
    for step in range(120):
        action = rng.choice(["create", "delete", "succeed"])
        if action == "create":
            pod = running_gpu_pod(template, f"churn-{step:04d}", node=EXCLUSIVE, labels={"app": "churn"})
            store.create("pods", pod, validate=False)
            created.append((pod["metadata"]["namespace"], pod["metadata"]["name"]))
            expected[("Pod", pod["metadata"]["namespace"], pod["metadata"]["name"], "nvidia.com/gpu", 1)] += 1
            continue
        alive = [h for h in holders + created if h not in ended]
        namespace, name = rng.choice(alive)
        if action == "delete":
            store.delete("pods", namespace, name)
        else:
            pod = copy.deepcopy(store.get("pods", namespace, name))
            pod["status"]["phase"] = "Succeeded"
            store.update("pods", pod, subresource="status")
        ended[(namespace, name)] = action
        for key in [k for k in expected if k[1:3] == (namespace, name)]:
            del expected[key]
        if step % 10 == 0:
            time.sleep(0.05)
        if step % 40 == 39:
            store.close_watches()

    # then the watched inventory converges on the cluster, despite the faults
    assert _wait_for(lambda: t.open_allocations(cluster) == expected), (
        Counter(t.open_allocations(cluster)) - expected,
        expected - Counter(t.open_allocations(cluster)),
    )
    syncer.stop_event.set()
    thread.join(timeout=10)
    assert cut.fired >= 1 and expire.fired >= 1
    assert sum(s.relists for s in cluster.sync_states.all()) >= 1

    # and a full resync finds nothing to repair
    report = ClusterSync(cluster, page_size=100).full_sync(record_drift=True)
    assert report.drift == 0, report.changes

    # and every churned holder has exactly one interval per unit, closed exactly when it ended
    rows = defaultdict(list)
    for row in Allocation.objects.filter(cluster=cluster, holder_kind="Pod"):
        rows[(row.namespace, row.holder_name, row.unit_key)].append(row)
    for (namespace, name, _), intervals in rows.items():
        assert len(intervals) == 1, (namespace, name, intervals)
        (interval,) = intervals
        assert (interval.ended_at is not None) == ((namespace, name) in ended)
        if interval.ended_at is not None:
            assert interval.ended_at >= interval.started_at
    # (a pod created and removed while a watch was down and before the re-list is invisible to any
    # watcher: only pods still alive are sure to be in the ledger)
    for holder in created:
        if holder not in ended:
            assert any(k[:2] == holder for k in rows), f"created pod {holder} never entered the ledger"


def test_a_node_event_keeps_the_dra_devices_its_slices_publish(kubesim_factory, register, mapped):
    # given a watched cluster whose DRA nodes publish devices through ResourceSlices
    sim = kubesim_factory(scenario="mixed", nodes=20, seed=1, bookmark_interval=0.5)
    cluster = register(sim)
    syncer = ClusterSync(cluster, page_size=100)
    thread = threading.Thread(target=_run, args=(syncer,), daemon=True)
    thread.start()
    assert _wait_for(lambda: t.dra_devices(cluster) == sim.truth.dra_devices)
    dra_nodes = sorted({s["spec"]["nodeName"] for s in sim.store.list_readonly("resourceslices")})

    # when every DRA node changes a label (as GPU Feature Discovery does on each refresh)
    relabel = {"metadata": {"labels": {"nvidia.com/gfd.timestamp": "1"}}}
    for name in dra_nodes:
        sim.store.patch_merge("nodes", None, name, relabel)

    # then the node rows follow, and the devices (owned by the slices, not the labels) stay
    assert _wait_for(
        lambda: all(
            n.labels.get("nvidia.com/gfd.timestamp") == "1" for n in cluster.nodes.filter(name__in=dra_nodes)
        )
    )
    assert t.dra_devices(cluster) == sim.truth.dra_devices
    syncer.stop_event.set()
    thread.join(timeout=10)
    assert ClusterSync(cluster, page_size=100).full_sync(record_drift=True).drift == 0
