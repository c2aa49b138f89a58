"""What a live resync's lists keep cached between their parts: the units pods and claims look up
stay while nodes and slices are listed unchanged and go when one changes; the DRA device map a
claims list primes in parts is the map read whole (inventory/sync/live_resync.py)."""

from __future__ import annotations

import copy

import pytest

from inventory.models import SyncKind
from inventory.sync import live_resync
from inventory.sync.context import SyncContext
from inventory.sync.handlers import apply_upserts
from inventory.sync.runner import ClusterSync

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def synced(kubesim_factory, register, mapped):
    sim = kubesim_factory(scenario="mixed", nodes=12, seed=1)
    cluster = register(sim)
    ClusterSync(cluster, page_size=50).full_sync()
    return sim, cluster


def test_unchanged_nodes_and_slices_keep_the_units_cached_and_a_changed_node_drops_them(
    synced, django_assert_num_queries
):
    # given a context that has read its nodes' units and the DRA devices
    sim, cluster = synced
    nodes = [copy.deepcopy(n) for n in sim.store.list_readonly("nodes")]
    slices = [copy.deepcopy(s) for s in sim.store.list_readonly("resourceslices")]
    names = {n["metadata"]["name"] for n in nodes}
    ctx = SyncContext(cluster=cluster)
    units = {name: list(refs) for name, refs in ctx.node_units(names).items()}
    devices = ctx.dra_devices()
    assert units and devices
    # when a resync lists them unchanged
    assert apply_upserts(ctx, SyncKind.NODES, nodes, listing=True) == 0
    assert apply_upserts(ctx, SyncKind.RESOURCE_SLICES, slices, listing=True) == 0
    # then the units are not read again
    with django_assert_num_queries(0):
        assert ctx.node_units(names) == units
        assert ctx.dra_devices() is devices
    # when a node changes, its units rebuilt
    changed = nodes[0]
    changed["metadata"].setdefault("labels", {})["example.com/rack"] = "r9"
    assert apply_upserts(ctx, SyncKind.NODES, [changed], listing=True) == 1
    # then the next look-up reads them again, and finds what is stored
    with django_assert_num_queries(1):
        again = {name: list(refs) for name, refs in ctx.node_units(names).items()}
    assert again == SyncContext(cluster=cluster).node_units(names)
    assert ctx.dra_devices() is not devices


def test_the_device_map_read_in_parts_is_the_map_read_whole(synced, monkeypatch):
    # given devices read two rows at a time
    _, cluster = synced
    monkeypatch.setattr(live_resync, "DEVICE_PART", 2)
    whole = SyncContext(cluster=cluster).dra_devices()
    assert len(whole) > 4
    # when a claims list primes its context with the parts
    ctx = SyncContext(cluster=cluster)
    since = ctx.units_dropped
    parts = list(live_resync.device_parts(ctx))
    primed = {}
    for part in parts:
        primed |= part
    ctx.prime_devices(primed, read_since=since)
    # then its map is the one read whole
    assert len(parts) > 2
    assert ctx.dra_devices() == whole


def test_devices_read_before_units_changed_are_not_primed(synced):
    # given devices read in parts, and units dropped meanwhile (a watch batch changed a slice)
    _, cluster = synced
    ctx = SyncContext(cluster=cluster)
    since = ctx.units_dropped
    ctx.units_changed()
    # when the parts are given to the context
    ctx.prime_devices({}, read_since=since)
    # then it reads what is stored instead of the stale parts
    assert ctx.dra_devices() == SyncContext(cluster=cluster).dra_devices() != {}


def test_a_resyncs_lists_keep_the_cached_units_and_a_cold_list_drops_them(synced, django_assert_num_queries):
    # given a context whose units and DRA devices are cached (as the watch loop keeps them)
    sim, cluster = synced
    names = {n["metadata"]["name"] for n in sim.store.list_readonly("nodes")}
    ctx = SyncContext(cluster=cluster)
    ctx.node_units(names)
    ctx.dra_devices()
    # when a resync's list begins, then they stay
    ctx.reset_lookups(units=False)
    assert ctx.devices_cached
    with django_assert_num_queries(0):
        ctx.node_units(names)
    # when a cold list begins, then they are read again
    ctx.reset_lookups()
    assert not ctx.devices_cached
    with django_assert_num_queries(1):
        ctx.node_units(names)


def test_the_cached_units_hold_one_object_per_shared_value(synced):
    # given a context that has read every node's units and the DRA devices, whole and in parts
    sim, cluster = synced
    names = {n["metadata"]["name"] for n in sim.store.list_readonly("nodes")}
    ctx = SyncContext(cluster=cluster)
    refs = [ref for refs in ctx.node_units(names).values() for ref in refs]
    whole = list(ctx.dra_devices().values())
    parted = [ref for part in live_resync.device_parts(SyncContext(cluster=cluster)) for ref in part.values()]
    # then the units of one node share its id, name and pool, and equal models, kinds and GE are one
    # object (not one per row: the caches hold ~150,000 units at 5,000 nodes)
    for found in (refs, whole, parted):
        for field in ("node_id", "node_name", "pool_id", "model_key", "kind", "ge_each"):
            values = [getattr(ref, field) for ref in found]
            assert len({id(value) for value in values}) == len(set(values)), field
    # and they are what is stored
    assert ctx.dra_devices() == SyncContext(cluster=cluster).dra_devices()
