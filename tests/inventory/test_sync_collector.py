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
