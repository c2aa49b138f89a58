"""A cold sync pauses full (and young) garbage collections and gives the process its thresholds back after it,
also when it fails and when two syncs overlap (inventory/sync/collector.py)."""

from __future__ import annotations

import gc

import pytest

from inventory.sync.collector import NO_FULL_COLLECTIONS, YOUNG_DURING_SYNC, no_full_collections


@pytest.fixture
def thresholds():
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def test_full_collections_pause_during_a_sync_and_come_back(thresholds):
    with no_full_collections():
        assert gc.get_threshold() == (YOUNG_DURING_SYNC, 10, NO_FULL_COLLECTIONS)
    assert gc.get_threshold() == (700, 10, 10)


def test_a_failed_sync_gives_the_thresholds_back(thresholds):
    with pytest.raises(RuntimeError), no_full_collections():
        raise RuntimeError("list failed")
    assert gc.get_threshold() == (700, 10, 10)


def test_overlapping_syncs_restore_when_the_last_ends(thresholds):
    first, second = no_full_collections(), no_full_collections()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert gc.get_threshold()[2] == NO_FULL_COLLECTIONS  # the second still lists
    second.__exit__(None, None, None)
    assert gc.get_threshold() == (700, 10, 10)


def test_garbage_cycles_made_during_the_sync_are_collected_after_it(thresholds):
    class Node:
        pass

    gc.collect()
    with no_full_collections():
        for _ in range(1000):
            a, b = Node(), Node()
            a.other, b.other = b, a  # a cycle only the collector frees
        del a, b
    # type(), not isinstance(): the heap holds weak proxies, and isinstance() on a dead one raises
    assert not [o for o in gc.get_objects() if type(o) is Node]


def _full_collections_during(action) -> int:
    full = []

    def note(phase, info):
        if phase == "start" and info["generation"] == 2:
            full.append(info)

    gc.callbacks.append(note)
    try:
        action()
    finally:
        gc.callbacks.remove(note)
    return len(full)


def test_a_resyncs_pause_ends_without_a_collection_and_gives_the_thresholds_back(thresholds):
    # given a periodic resync's pause (the watches' events wait for whatever the writer does)
    pause = no_full_collections(collect=False)
    pause.__enter__()
    assert gc.get_threshold() == (700, 10, NO_FULL_COLLECTIONS)
    # when it ends, then no full collection runs then, and the thresholds are the process's again
    assert _full_collections_during(lambda: pause.__exit__(None, None, None)) == 0
    assert gc.get_threshold() == (700, 10, 10)


def test_a_cold_sync_overlapping_a_resync_still_collects_when_the_last_ends(thresholds):
    cold, resync = no_full_collections(), no_full_collections(collect=False)
    cold.__enter__()
    resync.__enter__()
    assert _full_collections_during(lambda: cold.__exit__(None, None, None)) == 0  # the resync lists
    assert _full_collections_during(lambda: resync.__exit__(None, None, None)) == 1
    assert gc.get_threshold() == (700, 10, 10)
