"""Model and profile resolution at its edges (mutation survivors, docs/mutation-survivors-inventory.md):
what an operator reads in a warning, how far a renamed profile may drift, and what an unknown card shows."""

import pytest

from inventory.domain.gpu_models import (
    CATALOG,
    GpuModel,
    infer_model_from_profiles,
    parse_product_label,
    resolve_gpu_model,
    resolve_mig_profile,
)
from inventory.domain.issues import IssueSeverity, ParseIssue
from inventory.domain.mig_profiles import build_profiles

H100 = resolve_gpu_model(product="NVIDIA-H100-80GB-HBM3")


def test_catalog_models_show_their_display_names():
    assert H100.display_name == "NVIDIA H100 80GB"
    assert resolve_gpu_model(product="Tesla-T4").display_name == "NVIDIA Tesla T4"


@pytest.mark.parametrize(
    ("spelling", "key"),
    [
        ("NVIDIA A100 - PCIE - 40GB", "A100-40GB"),  # " - " becomes "---", collapsed to one dash
        ("__Tesla_T4__", "T4-16GB"),  # separators at the edges are dropped
        ("-NVIDIA-H100-NVL-", "H100-NVL-94GB"),
    ],
)
def test_separators_are_collapsed_and_trimmed_before_lookup(spelling, key):
    assert resolve_gpu_model(product=spelling).key == key


def test_an_unknown_card_keeps_its_name_and_reports_no_memory_when_none_is_known():
    titan = resolve_gpu_model(product=" NVIDIA TITAN X ")
    # Key "TITAN-X": the trailing X is part of the name, not a separator to trim.
    assert (titan.key, titan.display_name, titan.memory_mib) == ("TITAN-X", "NVIDIA TITAN X", 0)
    assert titan.known is False
    h20 = resolve_gpu_model(product="NVIDIA-NVIDIA H20-3e", memory_mib=143771)
    assert (h20.key, h20.memory_mib) == ("H20-3E", 143771)


def test_a_blank_product_is_the_unknown_model():
    assert resolve_gpu_model(product="  ").key == "UNKNOWN"


def test_a_product_label_keeps_its_raw_value_base_product_and_the_callers_memory():
    label = parse_product_label(value="A100-SXM4-40GB-MIG-1g.5gb-SHARED")
    assert (label.raw, label.base_product) == ("A100-SXM4-40GB-MIG-1g.5gb-SHARED", "A100-SXM4-40GB")
    unknown = parse_product_label(value="NVIDIA-GH200-480GB", memory_mib=97871)
    assert (unknown.model.known, unknown.model.memory_mib) == (False, 97871)


def test_an_unknown_profile_warning_names_the_profile_and_the_model():
    # Not a profile name at all, and a well-formed name on a card without MIG: the first refusal.
    assert resolve_mig_profile(model=H100, name="garbage") == (
        None,
        ParseIssue(
            IssueSeverity.WARNING,
            "mig.profile_unknown",
            "unknown MIG profile 'garbage' for H100-80GB",
            "garbage",
        ),
    )
    t4 = resolve_gpu_model(product="Tesla-T4")
    _, issue = resolve_mig_profile(model=t4, name="1g.5gb")
    assert (issue.message, issue.source) == ("unknown MIG profile '1g.5gb' for T4-16GB", "1g.5gb")
    # A 1g profile 5 GB from both 1g.10gb and 1g.20gb: no rename, the second refusal.
    assert resolve_mig_profile(model=H100, name="1g.15gb") == (
        None,
        ParseIssue(
            IssueSeverity.WARNING,
            "mig.profile_unknown",
            "unknown MIG profile '1g.15gb' for H100-80GB",
            "1g.15gb",
        ),
    )


def test_a_rename_warning_says_what_was_read_as_what():
    a100_80 = resolve_gpu_model(product="A100-SXM4-80GB")
    profile, issue = resolve_mig_profile(model=a100_80, name="7g.79gb")
    assert profile.name == "7g.80gb"
    assert (issue.message, issue.source) == (
        "MIG profile '7g.79gb' read as '7g.80gb' on A100-80GB",
        "7g.79gb",
    )


def test_a_rename_is_accepted_up_to_2_gb_away_and_no_further():
    # H100 3g.40gb: "3g.38gb" is 2 GB off (a rename), "3g.37gb" 3 GB off (unknown).
    assert resolve_mig_profile(model=H100, name="3g.38gb")[0].name == "3g.40gb"
    assert resolve_mig_profile(model=H100, name="3g.37gb")[0] is None


def test_the_nearest_of_two_candidates_is_taken_when_it_is_strictly_nearest():
    # H100 1g plain profiles: 1g.10gb is 1 GB from "1g.11gb", 1g.20gb 9 GB: read as 1g.10gb.
    profile, issue = resolve_mig_profile(model=H100, name="1g.11gb")
    assert profile.name == "1g.10gb"
    assert issue.code == "mig.profile_alias"


def test_a_rename_equally_near_two_profiles_is_not_guessed():
    # A card offering 1g.10gb and 1g.12gb: "1g.11gb" is 1 GB from each, so neither is chosen.
    profiles = build_profiles(
        card_compute_slices=7,
        card_memory_slices=8,
        rows=(("1g.10gb", 1, 9984, False), ("1g.12gb", 2, 11008, False)),
    )
    model = GpuModel("TWIN-1G", "twin 1g test card", 81920, 7, 8, profiles)
    profile, issue = resolve_mig_profile(model=model, name="1g.11gb")
    assert profile is None
    assert issue.code == "mig.profile_unknown"


def test_a_models_full_profile_set_identifies_it():
    a100_40 = next(model for model in CATALOG if model.key == "A100-40GB")
    assert infer_model_from_profiles(profile_names={p.name for p in a100_40.mig_profiles}) is a100_40
