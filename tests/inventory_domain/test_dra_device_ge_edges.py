"""A DRA device's GE (with the issues that say how it was reached) and its MIG placement."""

from fractions import Fraction

import pytest

from inventory.domain.dra_devices import GeBasis, parse_resource_slice
from inventory.domain.issues import warning
from inventory.domain.mig_profiles import MigPlacement

A100 = {"productName": {"string": "NVIDIA A100 80GB PCIe"}}


def _one_device(name, attributes=None, *, capacity=None, consumes=None, shared=None):
    """The single device of a slice holding it, and the slice's issues."""
    device = {"name": name, "attributes": attributes or {}}
    if capacity is not None:
        device["capacity"] = {key: {"value": value} for key, value in capacity.items()}
    if consumes is not None:
        device["consumesCounters"] = consumes
    spec = {"driver": "d", "pool": {"name": "p", "generation": 1}, "devices": [device]}
    if shared is not None:
        spec["sharedCounters"] = shared
    parsed = parse_resource_slice(obj={"metadata": {"name": "s"}, "spec": spec})
    (only,) = parsed.devices
    return only, parsed.issues


def _mig(profile, **extra):
    return {"type": {"string": "mig"}, "profile": {"string": profile}, **extra}


def _slices(prefix, indexes):
    return {f"{prefix}{i}": {"value": "1"} for i in indexes}


@pytest.mark.parametrize(
    ("profile", "ge"),
    [
        ("1g.5gb", Fraction(1, 7)),  # 1/7 compute > 1/8 memory
        ("2g.10gb", Fraction(2, 7)),  # 2/7 > 2/8
        ("3g.20gb", Fraction(1, 2)),  # 3/7 < 4/8 memory slices
        ("4g.20gb", Fraction(4, 7)),  # 4/7 > 4/8
        ("7g.40gb", Fraction(1)),  # 7/7 and 8/8
        ("8g.99gb", Fraction(1)),  # more compute than a card has: capped at one card
    ],
)
def test_a_mig_device_of_an_unknown_card_is_estimated_on_a_7x8_card(profile, ge):
    device, issues = _one_device("mig-a", _mig(profile))
    assert (device.model_key, device.ge, device.ge_basis) == ("UNKNOWN", ge, GeBasis.MIG_ESTIMATED)
    assert issues == (warning("mig.ge_estimated", f"mig-a: {profile} on UNKNOWN estimated", source="mig-a"),)


def test_a_renamed_profile_on_a_known_card_is_read_as_the_catalog_profile_with_a_warning():
    device, issues = _one_device("mig-a", _mig("3g.39gb", **A100))
    assert (device.model_key, device.ge, device.ge_basis) == (
        "A100-80GB",
        Fraction(1, 2),
        GeBasis.MIG_PROFILE,
    )
    assert issues == (
        warning(
            "mig.profile_alias", "MIG profile '3g.39gb' read as '3g.40gb' on A100-80GB", source="3g.39gb"
        ),
    )


@pytest.mark.parametrize(
    "attributes", [{"type": {"string": "mig"}}, _mig("half-a-card")], ids=["none", "unparsable"]
)
def test_a_mig_device_without_a_usable_profile_counts_whole_and_says_so(attributes):
    device, issues = _one_device("mig-a", attributes)
    assert (device.ge, device.ge_basis) == (1, GeBasis.ASSUMED_WHOLE)
    assert issues == (
        warning("dra.ge_assumed_whole", "mig-a: type 'mig' counted as one whole device", source="mig-a"),
    )


def test_a_profile_attribute_on_a_device_not_typed_mig_is_not_read_as_a_mig_instance():
    device, issues = _one_device("dev-a", {"profile": {"string": "1g.10gb"}, **A100})
    assert (device.ge, device.ge_basis, issues) == (1, GeBasis.ASSUMED_WHOLE, ())


def test_counters_of_an_unknown_set_are_reported_and_the_device_counted_whole():
    device, issues = _one_device(
        "dev-a",
        consumes=[{"counterSet": "elsewhere", "counters": {"multiprocessors": {"value": "14"}}}],
        shared=[{"name": "gpu-0-counter-set", "counters": {"multiprocessors": {"value": "98"}}}],
    )
    assert (device.ge, device.ge_basis) == (1, GeBasis.ASSUMED_WHOLE)
    assert issues == (
        warning("dra.counters_without_totals", "dev-a: consumes counters of an unknown set", source="dev-a"),
    )


def test_memory_slice_capacities_place_a_mig_device_whatever_its_name():
    device, _ = _one_device("mig-a", _mig("2g.20gb"), capacity={"memorySlice4": "1", "memorySlice3": "1"})
    assert device.placement == MigPlacement(3, 2)


def test_consumed_memory_slice_counters_place_a_device_whatever_its_name():
    device, _ = _one_device(
        "partition-a",
        {"type": {"string": "mig"}},
        consumes=[{"counterSet": "gpu-0-counter-set", "counters": _slices("memory-slice-", (7, 6))}],
        shared=[{"name": "gpu-0-counter-set", "counters": _slices("memory-slice-", range(8))}],
    )
    assert (device.placement, device.ge, device.ge_basis) == (
        MigPlacement(6, 2),
        Fraction(1, 4),
        GeBasis.COUNTERS,
    )


def test_a_whole_gpu_consuming_every_memory_slice_has_no_placement():
    # partitionable mode: the full-GPU device consumes all of its card's counters
    device, issues = _one_device(
        "gpu-0",
        {"type": {"string": "gpu"}},
        consumes=[{"counterSet": "gpu-0-counter-set", "counters": _slices("memory-slice-", range(8))}],
        shared=[{"name": "gpu-0-counter-set", "counters": _slices("memory-slice-", range(8))}],
    )
    assert (device.placement, device.ge, device.ge_basis, issues) == (None, 1, GeBasis.WHOLE, ())


def test_an_old_style_mig_name_gives_start_and_size_when_no_memory_slice_is_listed():
    device, _ = _one_device("gpu-1-mig-15-4-2", _mig("1g.20gb", **A100))
    assert device.placement == MigPlacement(4, 2)


@pytest.mark.parametrize(
    ("name", "profile", "placement"),
    [
        ("gpu-0-mig-1g10gb-19-6", "1g.10gb", MigPlacement(6, 1)),
        ("gpu-0-mig-2g20gb-14-4", "2g.20gb", MigPlacement(4, 2)),
        ("gpu-0-mig-3g40gb-9-4", "3g.40gb", MigPlacement(4, 4)),
        ("gpu-0-mig-4g40gb-5-0", "4g.40gb", MigPlacement(0, 4)),
        ("gpu-0-mig-7g80gb-0-0", "7g.80gb", MigPlacement(0, 8)),
        ("gpu-0-mig-6g70gb-3-0", "6g.70gb", None),  # no MIG card has a 6-slice profile: size unknown
        ("gpu-0-mig-1g10gb-19-6", "one-slice", None),
        ("gpu-0-mig-1g10gb-19-6", None, None),
    ],
)
def test_a_new_style_mig_name_gives_the_start_and_the_profile_the_size(name, profile, placement):
    attributes = _mig(profile, **A100) if profile else {"type": {"string": "mig"}, **A100}
    device, _ = _one_device(name, attributes)
    assert device.placement == placement
