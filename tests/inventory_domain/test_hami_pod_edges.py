"""HAMi pod annotations at their edges (mutation survivors, docs/mutation-survivors-inventory.md): the
issues an operator reads name the bad value and the annotation it came from, and a bad record never
hides the good ones after it."""

import json

import pytest

from gpuplatform.quantity import QuantityError
from inventory.domain.hami_pod import (
    HAMI_ALLOCATED_KEY,
    HAMI_BIND_TIME_KEY,
    HAMI_MIG_ALLOCATIONS_KEY,
    HAMI_TO_ALLOCATE_KEY,
    HamiContainerDevice,
    HamiMigAllocation,
    hami_memory_request_mib,
    parse_hami_device_list,
    parse_hami_mig_allocations,
    parse_hami_pod_annotations,
)
from inventory.domain.issues import error, shorten, warning
from inventory.domain.mig_profiles import MigPlacement
from tests.inventory_domain import realworld


def test_a_gpumem_request_of_zero_is_zero_and_a_negative_one_is_refused():
    assert hami_memory_request_mib(quantity="0") == 0
    with pytest.raises(QuantityError, match=r"^gpumem must be a whole, non-negative number of MiB: '-1'$"):
        hami_memory_request_mib(quantity="-1")


def test_bad_device_records_are_reported_with_their_text_and_the_good_ones_kept():
    # Container 0: a good device, an empty record, another good one; container 1: two bad records.
    value = "GPU-a,NVIDIA,1000,30::GPU-b,NVIDIA,2000,20;GPU-c,NVIDIA;GPU-d,NVIDIA,lots,20;"
    containers, issues = parse_hami_device_list(value=value)
    assert containers == (
        (HamiContainerDevice("GPU-a", "NVIDIA", 1000, 30), HamiContainerDevice("GPU-b", "NVIDIA", 2000, 20)),
        (),
        (),
    )
    assert containers[0][0].mig_template is None  # not a MIG device: no template, not ""
    assert issues == (
        error(
            "hami.pod.bad_device",
            "expected uuid,type,memory,cores: 'GPU-c,NVIDIA'",
            source=HAMI_ALLOCATED_KEY,
        ),
        error(
            "hami.pod.bad_device",
            "non-numeric memory/cores: 'GPU-d,NVIDIA,lots,20'",
            source=HAMI_ALLOCATED_KEY,
        ),
    )


def test_pod_issues_name_the_annotation_and_mig_allocations_are_read():
    mig_value = next(
        doc["reconstructed_example"]
        for doc in realworld.yaml_docs("hami-pod-annotations.yaml")
        if doc.get("name") == "reservation-first-mig-json (HAMi >= v2.10 source)"
    )
    assignment = parse_hami_pod_annotations(
        annotations={
            HAMI_TO_ALLOCATE_KEY: "GPU-c,NVIDIA;",
            HAMI_BIND_TIME_KEY: "yesterday",
            HAMI_MIG_ALLOCATIONS_KEY: mig_value,
        }
    )
    assert assignment.issues == (
        error(
            "hami.pod.bad_device",
            "expected uuid,type,memory,cores: 'GPU-c,NVIDIA'",
            source=HAMI_TO_ALLOCATE_KEY,
        ),
        warning("hami.pod.bad_bind_time", "'yesterday'", source=HAMI_BIND_TIME_KEY),
    )
    assert assignment.bind_time is None
    assert assignment.mig_allocations == parse_hami_mig_allocations(value=mig_value)[0]
    assert [allocation.profile for allocation in assignment.mig_allocations] == ["1g.10gb"]


def test_mig_allocations_are_read_entry_by_entry_and_bad_entries_reported():
    entries = [
        # The reconstructed HAMi >= 2.10 entry: placement {0}:1, no migUUID yet (scheduler-written).
        {
            "containerIndex": 0,
            "deviceIndex": 0,
            "gpuUUID": "GPU-a",
            "profile": "1g.10gb",
            "placement": {"start": 0, "size": 1},
        },
        # Filled in by the device plugin: second container, third card, 3g.40gb at {4}:4.
        {
            "containerIndex": 1,
            "deviceIndex": 2,
            "gpuUUID": "GPU-b",
            "profile": "3g.40gb",
            "placement": {"start": 4, "size": 4},
            "migUUID": "MIG-b",
        },
        # Indexes default to 0; a placement without a size is no placement; a non-string migUUID is none.
        {"gpuUUID": "GPU-c", "profile": "1g.10gb", "placement": {"start": 3}, "migUUID": 5},
        {"containerIndex": "x", "gpuUUID": "GPU-d", "profile": "1g.10gb"},  # bad index
        {"gpuUUID": 7, "profile": "1g.10gb"},  # uuid not a string
    ]
    allocations, issues = parse_hami_mig_allocations(value=json.dumps(entries))
    assert allocations == (
        HamiMigAllocation(0, 0, "GPU-a", "1g.10gb", MigPlacement(0, 1), None),
        HamiMigAllocation(1, 2, "GPU-b", "3g.40gb", MigPlacement(4, 4), "MIG-b"),
        HamiMigAllocation(0, 0, "GPU-c", "1g.10gb", None, None),
    )
    assert issues == tuple(
        error("hami.pod.mig_allocation_bad", shorten(entry), source=HAMI_MIG_ALLOCATIONS_KEY)
        for entry in entries[3:]
    )


def test_a_single_mig_allocation_object_and_broken_json():
    single = json.dumps(
        {
            "containerIndex": 0,
            "deviceIndex": 1,
            "gpuUUID": "GPU-a",
            "profile": "2g.20gb",
            "placement": {"start": 2, "size": 2},
        },
    )
    assert parse_hami_mig_allocations(value=single) == (
        (HamiMigAllocation(0, 1, "GPU-a", "2g.20gb", MigPlacement(2, 2), None),),
        (),
    )
    assert parse_hami_mig_allocations(value=" {broken ") == (
        (),
        (error("hami.pod.mig_allocations_invalid", "'{broken'", source=HAMI_MIG_ALLOCATIONS_KEY),),
    )
    assert parse_hami_mig_allocations(value="  ") == ((), ())
