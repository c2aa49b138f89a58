"""The catalog checked against the captured MIG tables (mig-profiles.md, nvidia-smi-mig.txt)."""

import re
from fractions import Fraction

import pytest

from inventory.domain.gpu_models import (
    CATALOG,
    infer_model_from_profiles,
    normalize_product,
    parse_product_label,
    resolve_gpu_model,
    resolve_mig_profile,
)
from inventory.domain.issues import IssueSeverity
from tests.inventory_domain import realworld

LGIP_BLOCK_MODELS = {
    "### lgip H100 80GB HBM3": "H100-80GB",
    "### lgip A100-SXM4-40GB": "A100-40GB",
    "### lgip H200 141GB": "H200-141GB",
    "### lgip A100 80GB PCIe": "A100-80GB",
    "### lgip H100 NVL": "H100-NVL-94GB",
}


def _model_for_block(title):
    return next((key for prefix, key in LGIP_BLOCK_MODELS.items() if title.startswith(prefix)), None)


def test_catalog_agrees_with_every_lgip_capture():
    checked = 0
    for title, rows in realworld.lgip_blocks().items():
        key = _model_for_block(title)
        if key is None:  # RTX PRO 6000 Blackwell: different family, not in the catalog on purpose
            assert "Blackwell" in title
            continue
        model = resolve_gpu_model(product=key)
        for row in rows:
            profile = model.mig_profile(row["name"])
            assert profile is not None, (title, row)
            assert profile.gi_profile_id == row["id"]
            assert profile.max_instances == row["total"]
            # Usable memory within 1% of lgip GiB (GFD's .memory label is used where it exists)
            assert abs(profile.memory_mib - row["mem_gib"] * 1024) <= 0.01 * profile.memory_mib, (title, row)
            checked += 1
    assert checked >= 28


def test_catalog_placements_match_lgipp():
    placements = realworld.lgipp_placements()
    for key in ("A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB", "H100-NVL-94GB"):
        for profile in resolve_gpu_model(product=key).mig_profiles:
            starts, size = placements[profile.gi_profile_id]
            assert profile.placement_starts == starts, (key, profile.name)
            assert profile.memory_slices == size, (key, profile.name)


def test_mig_profiles_md_tables_fractions_and_counts():
    # Rows "| 3g.40gb | 4/8 | 3/7 | ... | Max inst | GI ID | ..." of the A100-40GB and H100 tables
    text = realworld.text("mig-profiles.md")
    sections = {"## A100-SXM4-40GB": "A100-40GB", "## H100 80GB": "H100-80GB", "## H200 141GB": "H200-141GB"}
    checked = 0
    current = None
    for line in text.splitlines():
        if line.startswith("## "):
            current = next((key for prefix, key in sections.items() if line.startswith(prefix)), None)
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if current is None or len(cells) < 8 or not re.match(r"^\d+g\.\d+gb", cells[0]):
            continue
        profile = resolve_gpu_model(product=current).mig_profile(cells[0])
        assert profile is not None, cells
        sm = cells[2]
        assert sm == f"{profile.compute_slices}/{profile.card_compute_slices}", cells
        assert int(cells[6]) == profile.max_instances, cells
        assert int(cells[7]) == profile.gi_profile_id, cells
        checked += 1
    assert checked == 21


def test_ge_follows_the_design_examples_on_h100():
    h100 = resolve_gpu_model(product="NVIDIA-H100-80GB-HBM3")
    assert h100.mig_profile("1g.10gb").ge == Fraction(1, 7)
    assert h100.mig_profile("1g.20gb").ge == Fraction(2, 8)
    assert h100.mig_profile("3g.40gb").ge == Fraction(1, 2)  # max(3/7, 4/8): only two fit
    assert h100.mig_profile("4g.40gb").ge == Fraction(4, 7)
    assert h100.mig_profile("7g.80gb").ge == 1
    assert sum((h100.mig_profile("1g.10gb").ge for _ in range(7)), Fraction(0)) == 1


def test_a30_has_four_by_four_geometry():
    a30 = resolve_gpu_model(product="NVIDIA-A30")
    assert (a30.mig_compute_slices, a30.mig_memory_slices) == (4, 4)
    assert a30.mig_profile("1g.6gb").ge == Fraction(1, 4)
    assert a30.mig_profile("2g.12gb").max_instances == 2
    assert a30.mig_profile("4g.24gb").ge == 1


@pytest.mark.parametrize(
    ("product", "key", "profile", "shared"),
    [
        ("NVIDIA-H100-80GB-HBM3", "H100-80GB", None, False),
        ("A100-SXM4-40GB", "A100-40GB", None, False),
        ("A100-SXM4-40GB-MIG-1g.5gb", "A100-40GB", "1g.5gb", False),
        ("NVIDIA-A100-SXM4-40GB-MIG-3g.20gb", "A100-40GB", "3g.20gb", False),
        ("NVIDIA-A100-SXM4-80GB", "A100-80GB", None, False),
        ("Tesla-T4-SHARED", "T4-16GB", None, True),
        ("Tesla-T4", "T4-16GB", None, False),
        ("NVIDIA-H100-NVL-SHARED", "H100-NVL-94GB", None, True),
        ("NVIDIA-A30", "A30-24GB", None, False),
        ("A100-SXM4-40GB-MIG-1g.5gb-SHARED", "A100-40GB", "1g.5gb", True),
        ("NVIDIA-H100-80GB-HBM3-MIG-1g.10gb", "H100-80GB", "1g.10gb", False),
    ],
)
def test_it_reads_gfd_product_labels(product, key, profile, shared):
    label = parse_product_label(value=product)
    assert (label.model.key, label.mig_profile_name, label.shared) == (key, profile, shared)
    assert label.model.known


def test_every_product_selector_value_in_the_wild_resolves():
    doc = next(d for d in realworld.yaml_docs("node-capacity-samples.yaml") if d["name"].startswith("eidf"))
    for value in doc["gpu_product_values"]:
        assert parse_product_label(value=value).model.known, value


@pytest.mark.parametrize(
    ("spelling", "key"),
    [
        ("NVIDIA-NVIDIA A100-PCIE-40GB", "A100-40GB"),  # HAMi register
        ("NVIDIA A100-SXM4-80GB", "A100-80GB"),  # HAMi JSON form
        ("NVIDIA-Tesla T4", "T4-16GB"),
        ("NVIDIA-Tesla V100-PCIE-32GB", "V100-PCIE-32GB"),
        ("NVIDIA A100 80GB PCIe", "A100-80GB"),  # DRA productName / nvidia-smi
        ("NVIDIA H100 80GB HBM3", "H100-80GB"),
        ("NVIDIA-NVIDIA H100 NVL", "H100-NVL-94GB"),
    ],
)
def test_hami_dra_and_nvidia_smi_spellings_resolve(spelling, key):
    assert resolve_gpu_model(product=spelling).key == key


def test_nvidia_smi_l_gpu_names_resolve_or_degrade_to_generic():
    names = re.findall(r"^GPU \d+: (.+?) \(UUID", realworld.text("nvidia-smi-L.txt"), re.MULTILINE)
    resolved = {name: resolve_gpu_model(product=name) for name in names}
    assert resolved["NVIDIA H100 80GB HBM3"].key == "H100-80GB"
    assert resolved["A100-SXM4-40GB"].key == "A100-40GB"
    assert not resolved["NVIDIA GH200 96GB HBM3"].known  # tolerated, generic


def test_an_unknown_model_is_generic_with_the_callers_memory():
    model = resolve_gpu_model(product="NVIDIA-NVIDIA H20-3e", memory_mib=143771)
    assert not model.known
    assert not model.mig_capable
    assert model.memory_mib == 143771
    assert normalize_product("NVIDIA-NVIDIA H20-3e") == "H20-3E"


def test_renamed_profiles_resolve_with_a_warning():
    a100_80 = resolve_gpu_model(product="A100-SXM4-80GB")
    profile, issue = resolve_mig_profile(model=a100_80, name="7g.79gb")  # HAMi's name
    assert profile.name == "7g.80gb"
    assert issue.code == "mig.profile_alias"
    profile, issue = resolve_mig_profile(model=a100_80, name="3g.39gb")  # mig-parted#31 drivers
    assert profile.name == "3g.40gb"
    assert issue.severity is IssueSeverity.WARNING


def test_an_unknown_profile_is_a_warning_not_a_crash():
    h100 = resolve_gpu_model(product="NVIDIA-H100-80GB-HBM3")
    for name in ("1g.15gb", "garbage", "", "9g.99gb"):
        profile, issue = resolve_mig_profile(model=h100, name=name)
        assert profile is None
        assert issue.code == "mig.profile_unknown"


def test_profile_sets_identify_a_model_only_when_unique():
    assert infer_model_from_profiles(profile_names={"1g.5gb", "2g.10gb"}).key == "A100-40GB"
    assert infer_model_from_profiles(profile_names={"1g.10gb", "3g.40gb"}) is None  # A100-80GB or H100
    assert infer_model_from_profiles(profile_names=set()) is None


def test_catalog_keys_and_aliases_are_unique():
    seen = [alias for model in CATALOG for alias in (model.key, *model.aliases)]
    assert len(seen) == len(set(seen))
