"""The compiler (pure): each mode renders byte-stable native configs, equal to the golden files,
that parse back into the upstream shapes realworld/ holds (issue 12 item 2)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from inventory.domain.gpu_models import resolve_gpu_model
from policies.compiler import (
    ModelCards,
    PoolSpec,
    SharingMode,
    SharingSpec,
    normalise_parameters,
    pool_yield,
    render_bundle,
    validate_policy,
)
from policies.compiler.geometry import fit_geometry
from policies.compiler.naming import pool_resource_name, resource_name_problem
from tests.kubesim_fixtures import shared_dir
from tests.policies.native_shapes import device_plugin_problems, mig_parted_problems

GOLDEN = Path(__file__).parent / "golden"
H100_POOL = PoolSpec(cluster="prod-a", name="h100", models=(ModelCards("H100-80GB", 8, 2),))
MIXED_POOL = PoolSpec(
    cluster="prod-a",
    name="mig-mixed",
    models=(ModelCards("A100-40GB", 8, 1), ModelCards("H100-80GB", 4, 1)),
)
T4_POOL = PoolSpec(cluster="prod-a", name="t4", models=(ModelCards("T4-16GB", 16, 4),))


def spec(mode: str, **parameters) -> SharingSpec:
    m = SharingMode(mode)
    return SharingSpec(m, normalise_parameters(m, parameters))


CASES = {
    "exclusive": (spec("exclusive"), H100_POOL),
    "mig-mixed-7x1g": (spec("mig", geometry={"H100-80GB": {"1g.10gb": 7}}), H100_POOL),
    "mig-single-3g": (spec("mig", strategy="single", geometry={"H100-80GB": {"3g.40gb": 2}}), H100_POOL),
    "mig-two-models": (
        spec(
            "mig",
            geometry={
                "A100-40GB": {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1},
                "H100-80GB": {"4g.40gb": 1, "3g.40gb": 1},
            },
        ),
        MIXED_POOL,
    ),
    "time-slicing-4": (spec("time-slicing", replicas=4), T4_POOL),
    "mps-4": (spec("mps", replicas=4, memory_limit_mib=3840), T4_POOL),
    "hami-10": (spec("hami", split_count=10, memory_scaling=1.5, core_policy="force"), T4_POOL),
    "dra": (spec("dra"), H100_POOL),
}


def golden_text(bundle: dict) -> str:
    """One reviewable file per case: labels, then each file and ConfigMap, as rendered."""
    parts = ["# labels", json.dumps(bundle["labels"], indent=2, sort_keys=True)]
    for f in bundle["files"]:
        parts += [f"# file {f['path']}", f["content"]]
    for cm in bundle["configmaps"]:
        for key, value in cm["data"].items():
            parts += [f"# configmap {cm['namespace']}/{cm['name']} key {key}", value]
    return "\n".join(parts) + "\n"


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_mode_renders_its_golden_file_byte_for_byte(case):
    policy, pool = CASES[case]
    assert validate_policy(spec=policy, pool=pool) == []
    text = golden_text(render_bundle(spec=policy, pool=pool, revision=7))
    path = GOLDEN / f"{case}.txt"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert text == path.read_text()
    assert golden_text(render_bundle(spec=policy, pool=pool, revision=7)) == text  # stable on re-render


def _realworld_device_plugin_configs() -> dict[str, dict]:
    configs: dict[str, dict] = {}
    for doc in yaml.safe_load_all((shared_dir() / "realworld" / "device-plugin-configs.yaml").read_text()):
        data = doc.get("data") if doc.get("kind") == "ConfigMap" else doc
        for key, value in (data or {}).items():
            if isinstance(value, str) and value.lstrip().startswith(("version", "{")):
                configs[f"{(doc.get('metadata') or {}).get('name', '-')}/{key}"] = yaml.safe_load(value)
    return configs


def test_the_shape_checker_passes_real_configs_and_catches_the_real_misconfiguration():
    configs = _realworld_device_plugin_configs()
    assert len(configs) >= 12
    flagged = {name: device_plugin_problems(c) for name, c in configs.items() if device_plugin_problems(c)}
    assert flagged == {
        # k8s-device-plugin#1433: renameByDefault under flags is ignored by the plugin
        "time-slicing-config/any": [
            "flags.renameByDefault: unknown key",
            "flags.failRequestsGreaterThanOne: unknown key",
        ],
        # memoryGB is no field of ReplicatedResource (api/config/v1/replicas.go)
        "time-slicing-config-fine/l40s-mps": ["sharing.mps.resources[0].memoryGB: unknown key"],
    }


@pytest.mark.parametrize("case", sorted(CASES))
def test_rendered_configs_parse_back_into_the_upstream_shapes(case):
    policy, pool = CASES[case]
    bundle = render_bundle(spec=policy, pool=pool, revision=7)
    files = {f["path"]: yaml.safe_load(f["content"]) for f in bundle["files"]}
    if "device-plugin/config.yaml" in files:
        assert device_plugin_problems(files["device-plugin/config.yaml"]) == []
    if "mig-parted/config.yaml" in files:
        assert mig_parted_problems(files["mig-parted/config.yaml"]) == []
    if "hami/device-config.yaml" in files:
        real = yaml.safe_load((shared_dir() / "realworld" / "hami-config.yaml").read_text().split("---")[1])
        real_keys = set(yaml.safe_load(real["data"]["device-config.yaml"])["nvidia"])
        assert set(files["hami/device-config.yaml"]["nvidia"]) <= real_keys


def test_realworld_mig_parted_configs_pass_the_same_checker():
    for doc in yaml.safe_load_all(
        (shared_dir() / "realworld" / "mig-parted-config-default.yaml").read_text()
    ):
        assert mig_parted_problems(doc) == []


def test_a_mig_geometry_parsed_back_fits_the_card_it_was_made_for():
    bundle = render_bundle(spec=CASES["mig-two-models"][0], pool=MIXED_POOL, revision=7)
    config = yaml.safe_load(
        next(f["content"] for f in bundle["files"] if f["path"] == "mig-parted/config.yaml")
    )
    entries = config["mig-configs"]["gpuplatform-mig-mixed-r7"]
    by_filter = {tuple(e["device-filter"]): e["mig-devices"] for e in entries}
    a100 = by_filter[("0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE")]
    assert a100 == {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}  # the dra-driver quickstart's half-balanced
    assert fit_geometry(model=resolve_gpu_model(product="A100-40GB"), geometry=a100).fits


def test_each_pool_gets_its_own_resource_name_so_a_resource_quota_can_hold_it_apart():
    h100 = render_bundle(spec=spec("time-slicing", replicas=4), pool=H100_POOL, revision=1)
    t4 = render_bundle(spec=spec("time-slicing", replicas=4), pool=T4_POOL, revision=1)

    def name(bundle):
        config = yaml.safe_load(bundle["files"][0]["content"])
        return config["sharing"]["timeSlicing"]["resources"][0]["rename"]

    assert (name(h100), name(t4)) == ("nvidia.com/gpu-h100", "nvidia.com/gpu-t4")
    long = pool_resource_name("NVIDIA-H100-80GB-HBM3-with-a-very-long-pool-name-for-the-research-cluster")
    assert len(long) <= 63 and resource_name_problem(long) is None
    assert long != pool_resource_name(
        "NVIDIA-H100-80GB-HBM3-with-a-very-long-pool-name-for-the-research-clusters"
    )
    assert resource_name_problem("nvidia.com/GPU_Pool") is not None


@pytest.mark.parametrize(
    ("mode", "parameters", "pool", "code"),
    [
        ("time-slicing", {"replicas": 1}, T4_POOL, "policy.replicas_too_low"),
        ("time-slicing", {"replicas": 0}, T4_POOL, "policy.replicas_too_low"),
        ("mps", {"replicas": "many"}, T4_POOL, "policy.replicas_invalid"),
        ("mps", {"replicas": 4, "memory_limit_mib": 8000}, T4_POOL, "policy.mps_memory_limit_too_high"),
        ("mig", {"geometry": {"H100-80GB": {"1g.10gb": 8}}}, H100_POOL, "policy.mig_geometry_invalid"),
        (
            "mig",
            {"geometry": {"H100-80GB": {"4g.40gb": 1, "7g.80gb": 1}}},
            H100_POOL,
            "policy.mig_geometry_invalid",
        ),
        ("mig", {"geometry": {"H100-80GB": {"1g.5gb": 7}}}, H100_POOL, "policy.mig_geometry_invalid"),
        ("mig", {"geometry": {"H100-80GB": {"1g.10gb+me": 2}}}, H100_POOL, "policy.mig_geometry_invalid"),
        ("mig", {"geometry": {}}, H100_POOL, "policy.mig_geometry_missing"),
        (
            "mig",
            {"geometry": {"H100-80GB": {"1g.10gb": 7}, "A30-24GB": {"1g.6gb": 4}}},
            H100_POOL,
            "policy.mig_model_not_in_pool",
        ),
        ("mig", {"geometry": {"T4-16GB": {"1g.5gb": 1}}}, T4_POOL, "policy.mig_not_supported"),
        (
            "mig",
            {"strategy": "single", "geometry": {"H100-80GB": {"1g.10gb": 3, "2g.20gb": 2}}},
            H100_POOL,
            "policy.mig_single_needs_one_profile",
        ),
        (
            "mig",
            {"strategy": "both", "geometry": {"H100-80GB": {"1g.10gb": 7}}},
            H100_POOL,
            "policy.mig_strategy_unknown",
        ),
        ("hami", {"split_count": 0}, T4_POOL, "policy.split_count_invalid"),
        ("hami", {"memory_scaling": -1}, T4_POOL, "policy.memory_scaling_invalid"),
        ("hami", {"core_policy": "greedy"}, T4_POOL, "policy.core_policy_unknown"),
    ],
)
def test_bad_parameters_are_refused_with_a_stable_code(mode, parameters, pool, code):
    problems = validate_policy(spec=spec(mode, **parameters), pool=pool)
    assert code in [p.code for p in problems], problems


@pytest.mark.parametrize(
    ("geometry", "fits"),
    [
        ({"1g.10gb": 7}, True),
        ({"4g.40gb": 1, "3g.40gb": 1}, True),  # 4/7 + 1/2 GE: sums above one card (DESIGN §3)
        ({"3g.40gb": 2}, True),
        ({"2g.20gb": 3, "1g.10gb": 1}, True),
        ({"1g.20gb": 4}, True),
        ({"1g.20gb": 3, "1g.10gb": 2}, True),
        ({"2g.20gb": 3, "1g.10gb": 2}, False),  # 7 compute slices are taken by 2g x 3 + 1g
        ({"3g.40gb": 1, "4g.40gb": 1, "1g.10gb": 1}, False),
        ({"7g.80gb": 1}, True),
    ],
)
def test_h100_geometries_follow_the_profile_table_and_placements(geometry, fits):
    assert fit_geometry(model=resolve_gpu_model(product="H100-80GB"), geometry=geometry).fits is fits


def test_the_yield_says_what_the_option_gives_on_this_pool():
    result = pool_yield(spec=spec("mig", geometry={"H100-80GB": {"1g.10gb": 7}}), pool=H100_POOL)
    assert result.lines[0].units == 56 and result.lines[0].resource == "nvidia.com/mig-1g.10gb-h100"
    assert result.summary.startswith("7 x 1g.10gb per H100 -> 56 shares of 1/7 GE")
    assert "isolation high" in result.summary and "needs empty nodes" in result.summary
    ts = pool_yield(spec=spec("time-slicing", replicas=4), pool=T4_POOL)
    assert ts.lines[0].units == 64 and str(ts.lines[0].ge_each) == "1/4" and not ts.needs_empty_nodes
