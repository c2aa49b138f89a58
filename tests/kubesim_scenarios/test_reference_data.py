"""kubesim's built-in facts agree with the real-world captures in shared/realworld."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml

from kubesim.scenarios import dra, hami
from kubesim.scenarios.device_plugin_view import (
    DEVICE_PLUGIN_CONFIG_TEXT,
    SharingConfig,
    parse_device_plugin_config,
    render_gpu_state,
)
from kubesim.scenarios.gpu_models import MODELS
from kubesim.scenarios.ids import DEFAULT_NOW, Timestamps
from kubesim.scenarios.mig_geometry import MIG_PARTED_CONFIGS, parse_mig_parted_config, resolve_mig_config
from tests.kubesim_scenarios.helpers import realworld

# No skip without ../shared: each test then fails with the missing file's name, as the other suites do.

TABLES = {"A100-SXM4-40GB": "## A100-SXM4-40GB", "H100-80GB-HBM3": "## H100 80GB", "H200": "## H200 141GB"}


def yaml_documents(name: str) -> list[Any]:
    return [d for d in yaml.safe_load_all(realworld(name).read_text()) if d]


def profile_rows(heading: str) -> dict[str, list[str]]:
    text = realworld("mig-profiles.md").read_text()
    section = text[text.index(heading) :]
    section = section[: section.index("\n## ", 1)] if "\n## " in section[1:] else section
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 6 and re.match(r"^\d+g\.\d+gb(\+me)?$", cells[0]):
            rows[cells[0]] = cells
    return rows


@pytest.mark.parametrize("model_key", sorted(TABLES))
def test_mig_profiles_match_the_mig_user_guide_tables(model_key: str) -> None:
    rows = profile_rows(TABLES[model_key])
    model = MODELS[model_key]

    assert set(rows) == {p.name for p in model.mig_profiles}
    for profile in model.mig_profiles:
        cells = rows[profile.name]
        # Profile, Mem frac, SM frac, HW units, L2, CE, Max inst, GI ID, Mem GiB, SMs, DEC/ENC/JPEG/OFA
        assert int(cells[5]) == profile.copy_engines
        assert int(cells[6]) == profile.max_instances
        assert int(cells[7]) == profile.gi_id
        assert int(cells[9]) == profile.multiprocessors
        assert (
            cells[10] == f"{profile.decoders}/{profile.encoders}/{profile.jpeg_engines}/{profile.ofa_engines}"
        )


def test_mig_placements_match_the_lgipp_table() -> None:
    text = realworld("mig-profiles.md").read_text()
    placements = {}
    for match in re.finditer(r"^\| (\d+)\s+\| [^|]+\| \{([\d,]+)\}:(\d+)", text, re.MULTILINE):
        placements[int(match.group(1))] = (
            tuple(int(s) for s in match.group(2).split(",")),
            int(match.group(3)),
        )

    for model in MODELS.values():
        for profile in model.mig_profiles:
            assert placements[profile.gi_id] == (profile.starts, profile.memory_slots), (
                model.key,
                profile.name,
            )


def test_the_builtin_mig_parted_configs_are_the_upstream_ones() -> None:
    upstream = parse_mig_parted_config(realworld("mig-parted-config-default.yaml").read_text())
    custom: dict[str, Any] = {}
    for doc in yaml_documents("mig-parted-configs.yaml"):
        texts = []
        if isinstance(doc, dict) and "mig-configs" in doc:
            texts.append(yaml.safe_dump(doc))
        for holder in (
            doc.get("data") if isinstance(doc, dict) else None,
            ((doc.get("migManager") or {}).get("config") or {}).get("data")
            if isinstance(doc, dict)
            else None,
        ):
            if isinstance(holder, dict) and "config.yaml" in holder:
                texts.append(holder["config.yaml"])
        for text in texts:
            custom.update(parse_mig_parted_config(text))

    for name, entries in MIG_PARTED_CONFIGS.items():
        reference = upstream.get(name) or custom.get(name)
        assert reference is not None, name
        if name in upstream:
            # Upstream lists more device families; ours must be the same entries, in order, for ours.
            ours_filters = [e.device_filter for e in entries]
            reference = tuple(e for e in reference if not e.device_filter or e.device_filter in ours_filters)
        assert entries == reference, name


def test_the_builtin_device_plugin_configs_are_the_published_ones() -> None:
    published: dict[str, SharingConfig | None] = {}
    for doc in yaml_documents("device-plugin-configs.yaml"):
        for key, value in ((doc.get("data") or {}) if isinstance(doc, dict) else {}).items():
            if isinstance(value, str):
                published.setdefault(key, parse_device_plugin_config(value))

    for key, text in DEVICE_PLUGIN_CONFIG_TEXT.items():
        assert key in published, key
        assert parse_device_plugin_config(text) == published[key], key


def gfd(name: str) -> dict[str, Any]:
    labels: dict[str, Any] = json.loads(realworld(name).read_text())
    return labels


def test_rendered_labels_match_the_h100_mixed_gfd_dump() -> None:
    real = gfd("node-gfd-h100-mig-mixed.labels.json")
    model = MODELS["H100-80GB-HBM3"]
    layout = resolve_mig_config("all-balanced", model, 1)
    assert layout is not None

    state = render_gpu_state(model, 1, layout, "mixed", SharingConfig())

    for key, value in state.labels.items():
        if key not in ("nvidia.com/gpu.machine",):
            assert real[key] == value, key
    assert {k for k in real if k.startswith("nvidia.com/mig-")} == {
        k for k in state.labels if k.startswith("nvidia.com/mig-")
    }
    assert state.resources == {
        "nvidia.com/gpu": 0,
        "nvidia.com/mig-1g.10gb": 2,
        "nvidia.com/mig-2g.20gb": 1,
        "nvidia.com/mig-3g.40gb": 1,
    }


def test_rendered_labels_match_the_h100_mig_disabled_dump() -> None:
    real = gfd("node-gfd-h100-mig-disabled-single.labels.json")
    model = MODELS["H100-80GB-HBM3"]

    state = render_gpu_state(model, 1, [[]], "single", SharingConfig())

    for key in ("product", "count", "memory", "family", "replicas", "sharing-strategy", "compute.major"):
        assert state.labels[f"nvidia.com/gpu.{key}"] == real[f"nvidia.com/gpu.{key}"], key
    for key in ("nvidia.com/mig.capable", "nvidia.com/mig.strategy", "nvidia.com/mps.capable"):
        assert state.labels[key] == real[key]


def test_rendered_labels_match_the_a100_single_strategy_dump() -> None:
    real = gfd("node-gfd-a100-mig-single.labels.json")["after_all_1g_5gb_success"]
    model = MODELS["A100-SXM4-40GB"]
    layout = resolve_mig_config("all-1g.5gb", model, 1)
    assert layout is not None

    state = render_gpu_state(model, 1, layout, "single", SharingConfig())

    # That capture predates GFD's "NVIDIA-" product prefix; everything after it must match.
    assert state.labels["nvidia.com/gpu.product"] == "NVIDIA-" + real["nvidia.com/gpu.product"]
    for key in (
        "count",
        "memory",
        "multiprocessors",
        "slices.ci",
        "slices.gi",
        "engines.copy",
        "engines.decoder",
        "engines.encoder",
        "engines.jpeg",
        "engines.ofa",
    ):
        assert state.labels[f"nvidia.com/gpu.{key}"] == real[f"nvidia.com/gpu.{key}"], key
    assert state.resources == {"nvidia.com/gpu": 7}


@pytest.mark.parametrize(
    ("config", "resources", "product"),
    [
        ("tesla-t4", {"nvidia.com/gpu": 16}, "Tesla-T4-SHARED"),
        ("slice-4", {"nvidia.com/gpu": 0, "nvidia.com/gpu.shared": 16}, "Tesla-T4"),
    ],
)
def test_time_slicing_matches_the_documented_t4_node(
    config: str, resources: dict[str, int], product: str
) -> None:
    docs = {d["name"]: d for d in yaml_documents("node-capacity-samples.yaml")}
    sample = docs[
        "t4-timeslicing-renameByDefault-false"
        if config == "tesla-t4"
        else "t4-timeslicing-renameByDefault-true"
    ]
    sharing = parse_device_plugin_config(DEVICE_PLUGIN_CONFIG_TEXT[config])
    assert sharing is not None

    state = render_gpu_state(MODELS["T4"], 4, [[] for _ in range(4)], "none", sharing)

    assert {k: str(v) for k, v in state.resources.items()} == sample["status"]["capacity"]
    assert state.labels["nvidia.com/gpu.product"] == product == sample["labels"]["nvidia.com/gpu.product"]
    assert state.labels["nvidia.com/gpu.replicas"] == sample["labels"]["nvidia.com/gpu.replicas"]


def test_every_real_hami_register_annotation_parses() -> None:
    parsed = 0
    for doc in yaml_documents("hami-node-annotations.yaml"):
        value = ((doc.get("annotations") or {}) if isinstance(doc, dict) else {}).get(hami.REGISTER)
        if value:
            devices = hami.parse_register(value)
            assert devices and all(d.uuid.startswith("GPU-") and d.split_count == 10 for d in devices)
            parsed += 1
    assert parsed >= 6


def test_device_class_selectors_are_the_chart_ones() -> None:
    real = {
        d["metadata"]["name"]: d
        for d in yaml_documents("deviceclass-nvidia.yaml")
        if d.get("kind") == "DeviceClass"
    }

    for ours in dra.device_classes():
        assert ours["spec"]["selectors"] == real[ours["metadata"]["name"]]["spec"]["selectors"]


def test_slice_attributes_and_capacities_use_the_driver_names() -> None:
    listing = yaml_documents("resourceslice-nvidia-gpu.yaml")[0]
    real_attributes = set()
    real_capacity = set()
    for item in listing["items"]:
        for device in item["spec"]["devices"]:
            real_attributes |= set(device["attributes"])
            real_capacity |= set(device["capacity"])
    model = MODELS["H100-80GB-HBM3"]
    layout = resolve_mig_config("all-balanced", model, 2)
    assert layout is not None
    layout[1] = []  # one whole GPU next to a partitioned one
    pool = dra.build_pool(
        node="n",
        node_uid="u",
        model=model,
        mode="mig",
        uuids=["GPU-a", "GPU-b"],
        layout=layout,
        generation=1,
        ts=Timestamps(DEFAULT_NOW),
        age_seconds=0,
        slice_suffixes=["abcde"],
    )
    ours_attributes = {a for rs in pool.slices for d in rs["spec"]["devices"] for a in d["attributes"]}
    ours_capacity = {c for rs in pool.slices for d in rs["spec"]["devices"] for c in d["capacity"]}

    assert ours_attributes <= real_attributes | {"index", "minor"}
    assert {c for c in ours_capacity if not c.startswith("memorySlice")} <= real_capacity
