"""Small domain helpers pinned (mutation survivors, docs/mutation-survivors-inventory.md): what each
expanded unit carries, the issues an operator reads, and which label numbers count."""

from fractions import Fraction

import pytest

from inventory.domain.issues import IssueSeverity, ParseIssue, error, shorten, warning
from inventory.domain.mig_profiles import MigPlacement
from inventory.domain.raw_fields import as_int
from inventory.domain.shareable_units import ShareableUnit, ShareableUnitGroup, UnitKind, expand_units


def test_every_expanded_unit_carries_its_groups_card_profile_and_placement():
    # Two time-sliced 3g.40gb replicas of the instance at memory slot 4 on GPU 2: 1/2 GE / 2 = 1/4 each.
    group = ShareableUnitGroup(
        kind=UnitKind.TIME_SLICE_REPLICA,
        resource_name="nvidia.com/mig-3g.40gb",
        count=2,
        ge_each=Fraction(1, 4),
        model_key="H100-80GB",
        memory_mib=40320,
        mig_profile="3g.40gb",
        placement=MigPlacement(4, 4),
        gpu_index=2,
        gpu_uuid="GPU-3b1d9c4e",
    )
    expected = [
        ShareableUnit(
            kind=UnitKind.TIME_SLICE_REPLICA,
            resource_name="nvidia.com/mig-3g.40gb",
            ge=Fraction(1, 4),
            model_key="H100-80GB",
            ordinal=ordinal,
            memory_mib=40320,
            mig_profile="3g.40gb",
            placement=MigPlacement(4, 4),
            gpu_index=2,
            gpu_uuid="GPU-3b1d9c4e",
        )
        for ordinal in (0, 1)
    ]
    assert list(expand_units(group)) == expected


def test_issues_carry_their_message_and_source_and_default_to_no_source():
    assert warning("gfd.bad_number", "not a count: 'x'", source="label nvidia.com/gpu.count") == ParseIssue(
        IssueSeverity.WARNING, "gfd.bad_number", "not a count: 'x'", "label nvidia.com/gpu.count"
    )
    assert error("hami.bad", "cut", source="annotation a") == ParseIssue(
        IssueSeverity.ERROR, "hami.bad", "cut", "annotation a"
    )
    assert warning("c", "m").source == ""
    assert error("c", "m").source == ""


def test_values_in_messages_are_cut_to_80_characters():
    assert shorten("abc") == "'abc'"
    exactly_80 = "a" * 78  # repr adds two quotes: 80 characters, kept whole
    assert shorten(exactly_80) == repr(exactly_80)
    too_long = "b" * 79  # repr is 81 characters: 77 of them and "...", 80 in all
    assert shorten(too_long) == "'" + "b" * 76 + "..."
    assert len(shorten(too_long)) == 80


@pytest.mark.parametrize(("value", "number"), [("7", 7), (" +8 ", 8), ("-3", -3), (4, 4)])
def test_signed_decimal_label_values_are_numbers(value, number):
    assert as_int(value) == number


@pytest.mark.parametrize("value", ["X8", "8-", "8+", "eight", "", True, 8.0, None])
def test_other_label_values_are_not_numbers(value):
    assert as_int(value) is None
