"""Health from heartbeats (issue 27): the inventory page, /readyz and the overview judge each kind of
a cluster's sync by when its watch loop last succeeded. The loop is the real one, on kubesim; it is
stopped as a dead thread would stop, and the clock is moved rather than waited for."""

from __future__ import annotations

import re
import threading
import time
from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.test import Client

from gpuplatform.health.models import Heartbeat
from inventory.models import sync_heartbeat_name
from inventory.sync.runner import KIND_ORDER
from inventory.sync.service import keep_synced

pytestmark = pytest.mark.django_db(transaction=True)

KINDS = list(KIND_ORDER)  # what a resourcequota cluster syncs (Workloads only on kueue clusters)


def _keep_synced(cluster, stop):
    try:
        keep_synced(cluster=cluster, stop=stop, resync_seconds=3600)
    finally:
        connection.close()


def _wait_for(predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


def _page(client: Client, path: str) -> str:
    return re.sub(r"\s+", " ", client.get(path).content.decode())


def test_a_stopped_sync_reads_stale_within_a_minute_on_the_inventory_page_readyz_and_the_overview(
    kubesim_factory, register, cast
):
    # given a cluster kept synced by its watch loop
    sim = kubesim_factory(scenario="mixed", nodes=4, seed=1)
    cluster = register(sim)
    stop = threading.Event()
    loop = threading.Thread(target=_keep_synced, args=(cluster, stop), daemon=True)
    loop.start()
    names = [sync_heartbeat_name(cluster.pk, kind) for kind in KINDS]
    assert _wait_for(lambda: Heartbeat.objects.filter(name__in=names).count() == len(KINDS))
    client = Client()
    client.force_login(cast.pat)

    inventory = _page(client, "/inventory/")
    assert inventory.count('data-testid="sync-ok"') == len(KINDS)
    assert "stale" not in inventory
    ready = client.get("/readyz")
    assert (ready.status_code, ready.json()["status"], ready.json()["loops"]["stale"]) == (200, "ok", [])
    assert 'data-testid="attention-loops-stale' not in _page(client, "/")

    # when the loop stops (as the demo's died on a locked database) and the clock moves on
    stop.set()
    loop.join(timeout=30)
    assert not loop.is_alive()
    last = max(Heartbeat.objects.filter(name__in=names).values_list("beat_at", flat=True))

    with time_machine.travel(last + timedelta(seconds=59), tick=False):
        # then 59 s after its last success it is not stale yet
        assert client.get("/readyz").json()["status"] == "ok"
        assert "stale" not in _page(client, "/inventory/")

    with time_machine.travel(last + timedelta(seconds=61), tick=False):
        # and 61 s after, every page says so, each kind with the time of its last success
        inventory = _page(client, "/inventory/")
        assert inventory.count('data-testid="sync-stale"') == len(KINDS)
        assert 'data-testid="sync-ok"' not in inventory
        for kind in KINDS:
            beat_at = Heartbeat.objects.get(name=sync_heartbeat_name(cluster.pk, kind)).beat_at
            assert f"{kind}: stale since {beat_at:%Y-%m-%d %H:%M} UTC" in inventory

        ready = client.get("/readyz")
        assert ready.status_code == 200  # degraded, not unready: restarting the web would not help
        body = ready.json()
        assert body["status"] == "degraded"
        assert body["checks"]["database"]["ok"] is True
        assert sorted(loop["name"] for loop in body["loops"]["stale"]) == sorted(names)
        assert "sim" not in ready.content.decode()  # anyone may ask /readyz: ids, not cluster names

        overview = _page(client, "/")
        item = re.search(r'<li data-testid="attention-loops-stale-inventory"[^>]*>(.*?)</li>', overview)
        assert item is not None
        assert f'<a href="/inventory/"><strong>{len(KINDS)} loops stale</strong></a>' in item.group(1)
        assert "Inventory sync of sim: deviceclasses" in item.group(1)

        # a tenant's people are not told of the platform's loops
        client.force_login(cast.alice)
        assert "loops-stale" not in _page(client, "/")

    # when the sync runs again, the pages are green again
    stop = threading.Event()
    loop = threading.Thread(target=_keep_synced, args=(cluster, stop), daemon=True)
    loop.start()
    try:
        assert _wait_for(
            lambda: (
                Heartbeat.objects.filter(name__in=names, beat_at__gt=last + timedelta(seconds=1)).count()
                == len(KINDS)
            )
        )
        assert Client().get("/readyz").json()["status"] == "ok"
    finally:
        stop.set()
        loop.join(timeout=30)


def test_a_removed_cluster_leaves_no_stale_heartbeat(kubesim_factory, register, cast):
    from inventory.services import delete_cluster

    sim = kubesim_factory(scenario="mixed", nodes=2, seed=1)
    cluster = register(sim)
    stop = threading.Event()
    loop = threading.Thread(target=_keep_synced, args=(cluster, stop), daemon=True)
    loop.start()
    names = [sync_heartbeat_name(cluster.pk, kind) for kind in KINDS]
    assert _wait_for(lambda: Heartbeat.objects.filter(name__in=names).count() == len(KINDS))
    stop.set()
    loop.join(timeout=30)
    # the sync recorded allocations for the scenario's pods: those clusters keep their history
    cluster.allocations.all().delete()

    delete_cluster(actor=cast.pat, cluster_id=cluster.pk)

    assert not Heartbeat.objects.filter(name__in=names).exists()
    with time_machine.travel(time.time() + 3600, tick=False):
        assert Client().get("/readyz").json()["status"] == "ok"
