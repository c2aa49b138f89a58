"""Scenario objects are what a real API server would serve: official schemas, unique names, determinism."""

from __future__ import annotations

import json
from collections import Counter

import kubernetes_validate
import pytest

from kubesim.scenarios import NAMES, build
from tests.kubesim_scenarios.helpers import schema_errors

# Enough nodes that every pool of the scenario gets at least one node (mixed has 11 pools).
SMALL = {"mixed": 14}


@pytest.mark.parametrize("name", NAMES)
def test_every_object_of_a_small_build_validates_against_the_official_schema(name: str) -> None:
    scenario = build(name, nodes=SMALL.get(name, 4), seed=11)

    failures = {}
    for obj in scenario.objects:
        errors = schema_errors(obj)
        if errors:
            failures[f"{obj['kind']}/{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"] = (
                errors
            )
    assert not failures, dict(list(failures.items())[:5])


def test_kubernetes_validate_itself_accepts_one_object_of_every_kind() -> None:
    scenario = build("mixed", nodes=SMALL["mixed"], seed=2)
    first_of_kind = {}
    for obj in scenario.objects:
        first_of_kind.setdefault(obj["kind"], obj)

    for obj in first_of_kind.values():
        assert kubernetes_validate.validate(obj, "1.35", strict=True)
    assert set(first_of_kind) >= {
        "Namespace",
        "ConfigMap",
        "Node",
        "Pod",
        "DeviceClass",
        "ResourceSlice",
        "ResourceClaim",
        "ResourceClaimTemplate",
    }


@pytest.mark.parametrize("name", NAMES)
def test_object_names_are_unique_per_kind_and_namespace(name: str) -> None:
    scenario = build(name, nodes=SMALL.get(name, 6), seed=5)

    keys = Counter(
        (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in scenario.objects
    )

    assert [key for key, n in keys.items() if n > 1] == []


def test_the_same_seed_builds_byte_identical_objects() -> None:
    first = build("mixed", nodes=20, seed=42)
    second = build("mixed", nodes=20, seed=42)

    assert json.dumps(first.objects, sort_keys=True) == json.dumps(second.objects, sort_keys=True)
    assert first.truth == second.truth


def test_another_seed_builds_another_cluster() -> None:
    first = build("mixed", nodes=20, seed=1)
    second = build("mixed", nodes=20, seed=2)

    assert json.dumps(first.objects, sort_keys=True) != json.dumps(second.objects, sort_keys=True)


def test_empty_has_namespaces_and_operator_config_but_no_nodes() -> None:
    scenario = build("empty", nodes=0, seed=0)

    kinds = Counter(o["kind"] for o in scenario.objects)

    assert kinds["Node"] == 0
    assert kinds["Namespace"] == 7
    assert scenario.truth.total_gpus == 0


def test_custom_namespaces_replace_the_default_tenants() -> None:
    scenario = build("exclusive", nodes=3, seed=1, namespaces=["alpha", "beta"])

    tenant_pods = {o["metadata"]["namespace"] for o in scenario.objects if o["kind"] == "Pod"}

    assert tenant_pods <= {"alpha", "beta", "gpu-operator", "kube-system"}
    assert {"alpha", "beta"} <= tenant_pods


def test_pod_and_claim_counts_follow_their_parameters() -> None:
    scenario = build("dra", nodes=6, seed=3, pods_per_node=10, claims_per_node=7)

    kinds = Counter(o["kind"] for o in scenario.objects)

    assert kinds["Pod"] == 6 * 10 + 6 * 5  # tenant pods plus five daemon pods per node
    assert kinds["ResourceClaim"] == 6 * 7


def test_an_unknown_scenario_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown scenario"):
        build("nope", nodes=1, seed=0)
