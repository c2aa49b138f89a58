"""HAMi pod annotations at their edges (mutation survivors, docs/mutation-survivors-inventory.md): the
issues an operator reads name the bad value and the annotation it came from, and a bad record never
hides the good ones after it."""

import pytest

from gpuplatform.quantity import QuantityError
from inventory.domain.hami_pod import (
    HAMI_ALLOCATED_KEY,
    HAMI_BIND_TIME_KEY,
    HAMI_MIG_ALLOCATIONS_KEY,
    HAMI_TO_ALLOCATE_KEY,
    HamiContainerDevice,
    hami_memory_request_mib,
    parse_hami_device_list,
    parse_hami_mig_allocations,
    parse_hami_pod_annotations,
)
from inventory.domain.issues import error, warning
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
