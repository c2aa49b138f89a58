"""MIG profiles built from captured tables at test time (the catalog itself is built at import, where the
mutation run cannot see it; docs/mutation-survivors-inventory.md)."""

from fractions import Fraction

import pytest

from inventory.domain.mig_profiles import ProfileName, build_profiles, parse_profile_name
from tests.inventory_domain import realworld


def test_profile_names_split_into_compute_memory_and_variant():
    assert parse_profile_name("3g.40gb") == ProfileName(3, 40, "")  # plain: "" not None
    assert parse_profile_name(" 1g.10gb+me ") == ProfileName(1, 10, "+me")
    assert parse_profile_name("1g.24gb-me") == ProfileName(1, 24, "-me")
    assert parse_profile_name("nvidia.com/gpu") is None


def test_profiles_built_from_the_h100_lgip_capture_match_it_row_for_row():
    block = next(
        rows for title, rows in realworld.lgip_blocks().items() if title.startswith("### lgip H100 80GB")
    )
    placements = realworld.lgipp_placements()
    # Rows as a catalog entry writes them: memory slices from lgipp ("Placements: {0,4}:4" -> 4), usable
    # memory = lgip GiB x 1024 (39.50 GiB -> 40448 MiB), none nominal.
    rows = tuple((row["name"], placements[row["id"]][1], int(row["mem_gib"] * 1024), False) for row in block)
    profiles = build_profiles(card_compute_slices=7, card_memory_slices=8, rows=rows)
    assert [p.name for p in profiles] == [row["name"] for row in block]
    for profile, row in zip(profiles, block, strict=True):
        starts, size = placements[row["id"]]
        assert profile.compute_slices == int(row["name"][0]), row
        assert profile.memory_slices == size, row
        assert profile.memory_mib == int(row["mem_gib"] * 1024), row
        assert profile.max_instances == row["total"], row
        assert profile.placement_starts == starts, row
        assert profile.gi_profile_id == row["id"], row
        assert profile.media_extensions is row["name"].endswith("+me"), row
        assert profile.memory_is_nominal is False
        assert (profile.card_compute_slices, profile.card_memory_slices) == (7, 8)
    by_name = {p.name: p for p in profiles}
    # GE by hand: 1g.10gb max(1/7, 1/8) = 1/7; 3g.40gb max(3/7, 4/8) = 1/2; 1g.10gb+me: one per card.
    assert by_name["1g.10gb"].ge == Fraction(1, 7)
    assert by_name["3g.40gb"].ge == Fraction(1, 2)
    assert by_name["3g.40gb"].memory_mib == 40448  # 39.5 x 1024
    assert (by_name["1g.10gb+me"].max_instances, by_name["1g.10gb+me"].gi_profile_id) == (1, 20)


def test_a30_profiles_keep_the_nominal_memory_flag_and_media_variant():
    profiles = build_profiles(
        card_compute_slices=4,
        card_memory_slices=4,
        rows=(("2g.12gb", 2, 12288, True), ("2g.12gb+me", 2, 12288, False)),
    )
    plain, media = profiles
    assert (plain.media_extensions, plain.max_instances, plain.placement_starts) == (False, 2, (0, 2))
    assert (media.media_extensions, media.max_instances) == (True, 1)  # only one +me instance per card
    assert (plain.memory_is_nominal, media.memory_is_nominal) == (True, False)
    assert plain.gi_profile_id is None  # no lgipp capture for A30
    assert plain.ge == Fraction(1, 2)  # max(2/4, 2/4)


def test_a_typo_in_catalog_data_fails_loudly_naming_it():
    with pytest.raises(ValueError, match=r"^bad MIG profile name in catalog: '3g40gb'$"):
        build_profiles(card_compute_slices=7, card_memory_slices=8, rows=(("3g40gb", 4, 40320, False),))
