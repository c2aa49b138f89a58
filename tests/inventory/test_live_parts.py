"""The parts a live resync applies a list page in: sized by what the kind's last parts took."""

from __future__ import annotations

from inventory.sync.live_resync import FIRST_PART, PART_SECONDS, SMALLEST_PART, LiveList


def test_a_kind_cheap_per_object_gets_larger_parts_and_a_dear_one_smaller():
    # given a list of one kind, whose first part has the first part's size
    cheap, dear = LiveList(kind="pods", watched=True), LiveList(kind="resourceslices", watched=True)
    assert cheap.part_size() == dear.part_size() == FIRST_PART
    # when each object of one kind takes a tenth of what a first part's would in PART_SECONDS, and
    # each of the other's four times as much
    for _ in range(8):
        size = cheap.part_size()
        cheap.part_took(size, size * PART_SECONDS / FIRST_PART / 10)
        size = dear.part_size()
        dear.part_took(size, size * PART_SECONDS / FIRST_PART * 4)
    # then each kind's parts come to what takes PART_SECONDS
    assert abs(cheap.part_size() - FIRST_PART * 10) <= 1  # floats: 499 or 500
    assert abs(dear.part_size() - FIRST_PART // 4) <= 1


def test_parts_stay_within_bounds_and_a_part_of_nothing_changes_nothing():
    # given a list whose parts took no time at all, and one whose part took ten seconds
    instant, stuck = LiveList(kind="pods", watched=True), LiveList(kind="pods", watched=True)
    instant.part_took(50, 0.0)
    stuck.part_took(50, 10.0)
    # when a part applied nothing (all its entries left to the watch)
    stuck.part_took(0, 10.0)
    # then the sizes stay between the smallest and the largest part
    assert instant.part_size() == FIRST_PART  # no time measured: no estimate either
    assert stuck.part_size() == SMALLEST_PART
