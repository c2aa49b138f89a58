"""The Kueue compiler over the demo's organisation: a golden file, byte-stable, every object valid
against Kueue v0.19.2's own CRD schemas (and CEL rules) and its webhooks' rules; and the catalogues it
must refuse whole, with a message that says why.

Regenerate the golden file after a deliberate change with
``KUEUE_GOLDEN_UPDATE=1 .venv/bin/pytest tests/admission_engine/test_kueue_compile.py``, and read the diff.
"""

from __future__ import annotations

import dataclasses
import os
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
import yaml

from quotas.kueue.compile import compile_cluster
from quotas.kueue.model import CompileError, FlavorInput, QuotaInput, ResourceInput, TenantInput
from quotas.kueue.render import to_yaml
from tests.admission_engine.kueue_demo import demo_input
from tests.admission_engine.kueue_schema import schema_errors
from tests.admission_engine.kueue_webhooks import reference_errors, webhook_errors

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "kueue" / "demo.yaml"


def by_name(objects, kind):
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def test_the_demo_compiles_to_the_golden_file_byte_for_byte():
    text = to_yaml(compile_cluster(demo_input()).objects)
    if os.environ.get("KUEUE_GOLDEN_UPDATE"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()
    # and again: nothing depends on set or dict order
    assert to_yaml(compile_cluster(demo_input()).objects) == text


def test_the_output_does_not_depend_on_the_order_of_the_input():
    spec = demo_input()
    shuffled = dataclasses.replace(
        spec,
        tenants=tuple(reversed(spec.tenants)),
        quotas=tuple(reversed(spec.quotas)),
        flavors=tuple(reversed(spec.flavors)),
        nodes=tuple(reversed(spec.nodes)),
        queues=tuple(reversed(spec.queues)),
    )
    assert to_yaml(compile_cluster(shuffled).objects) == to_yaml(compile_cluster(spec).objects)


def test_every_object_is_valid_against_kueues_own_schemas_and_webhook_rules():
    objects = list(compile_cluster(demo_input()).objects)
    errors = [e for o in objects for e in schema_errors(o)]
    errors += [e for o in objects for e in webhook_errors(o)]
    errors += reference_errors(objects)
    assert errors == []
    assert all(o["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpuplatform" for o in objects)


def test_the_schema_check_is_real_it_catches_what_kueue_refuses():
    objects = list(compile_cluster(demo_input()).objects)
    queue = by_name(objects, "ClusterQueue")["vision"]
    broken = yaml.safe_load(yaml.safe_dump(queue))
    del broken["spec"]["cohortName"]  # borrowing limits then need a cohort (a CEL rule)
    broken["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = "2"
    broken["spec"]["queueingStrategy"] = "Whenever"
    errors = schema_errors(broken)
    assert any("queueingStrategy" in e for e in errors)
    assert any("borrowingLimit must be nil when cohort is empty" in e for e in errors)
    broken["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] = "99"
    assert any("lendingLimit must be less than or equal" in e for e in webhook_errors(broken))


def test_the_demo_tree_becomes_cohorts_and_its_teams_cluster_queues():
    objects = compile_cluster(demo_input()).objects
    cohorts = by_name(objects, "Cohort")
    assert set(cohorts) == {"acme", "research", "product", "platform"}
    assert "parentName" not in cohorts["acme"]["spec"]
    assert cohorts["research"]["spec"]["parentName"] == "acme"
    queues = by_name(objects, "ClusterQueue")
    assert set(queues) == {"vision", "nlp", "recsys", "search", "infra"}
    vision = queues["vision"]["spec"]
    assert vision["cohortName"] == "research"
    assert vision["namespaceSelector"] == {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-vision"]}
        ]
    }
    # whole H100s and shared T4s both count nvidia.com/gpu: one resource group, a flavor each
    groups = {tuple(g["coveredResources"]): g for g in vision["resourceGroups"]}
    gpu = groups[("nvidia.com/gpu",)]
    assert [(f["name"], f["resources"][0]["nominalQuota"]) for f in gpu["flavors"]] == [
        ("h100", "4"),
        ("t4-shared", "16"),
    ]
    assert groups[("gpu.nvidia.com",)]["flavors"][0]["name"] == "h100-dra"
    assert groups[("nvidia.com/mig-3g.40gb",)]["flavors"][0]["resources"][0]["nominalQuota"] == "2"
    # search has no namespace on the cluster: its queue keeps its quota (it lends) but matches none
    assert queues["search"]["spec"]["namespaceSelector"]["matchExpressions"][0]["operator"] == "DoesNotExist"
    assert vision["admissionChecksStrategy"] == {"admissionChecks": [{"name": "gpuplatform-budget"}]}
    assert (
        by_name(objects, "AdmissionCheck")["gpuplatform-budget"]["spec"]["controllerName"]
        == "gpuplatform.dev/budget"
    )


def test_the_cluster_queue_states_our_preemption_not_kueues_defaults():
    vision = by_name(compile_cluster(demo_input()).objects, "ClusterQueue")["vision"]["spec"]
    assert vision["preemption"] == {
        "withinClusterQueue": "LowerPriority",
        "reclaimWithinCohort": "Any",
        "borrowWithinCohort": {"policy": "Never"},
    }
    assert vision["queueingStrategy"] == "BestEffortFIFO"  # from its "default" queue, not "interactive"
    assert vision["flavorFungibility"] == {
        "whenCanBorrow": "MayStopSearch",
        "whenCanPreempt": "TryNextFlavor",
    }
    assert vision["fairSharing"] == {"weight": "1"}


def test_each_tenant_namespace_gets_a_local_queue_per_queue_of_its_tenant():
    objects = compile_cluster(demo_input()).objects
    local = sorted(
        (o["metadata"]["namespace"], o["metadata"]["name"], o["spec"]["clusterQueue"])
        for o in objects
        if o["kind"] == "LocalQueue"
    )
    assert local == [
        ("team-infra", "default", "infra"),
        ("team-nlp", "default", "nlp"),
        ("team-recsys", "default", "recsys"),
        ("team-vision", "default", "vision"),
        ("team-vision", "interactive", "vision"),
    ]


def test_flavors_select_their_pool_by_labels_no_other_node_has():
    spec = demo_input()
    flavors = by_name(compile_cluster(spec).objects, "ResourceFlavor")
    for name, flavor in flavors.items():
        pool = next(f.pool for f in spec.flavors if f.name == name)
        labels = flavor["spec"]["nodeLabels"]
        matching = {n.pool for n in spec.nodes if all(n.labels.get(k) == v for k, v in labels.items())}
        assert matching == {pool}, name
        assert all(n.labels.get(k) == v for n in spec.nodes if n.pool == pool for k, v in labels.items())


def test_priority_classes_become_workload_priority_classes_and_the_unpreemptible_one_is_flagged():
    compiled = compile_cluster(demo_input())
    assert {n: o["value"] for n, o in by_name(compiled.objects, "WorkloadPriorityClass").items()} == {
        "batch": 100,
        "standard": 500,
        "prod": 1000,
    }
    assert any("'prod' is not preemptible" in note for note in compiled.notes)


def test_dra_flavors_need_kueues_device_class_mapping():
    compiled = compile_cluster(demo_input())
    assert compiled.device_class_mappings == (
        {"name": "gpu.nvidia.com", "deviceClassNames": ["gpu.nvidia.com"]},
    )


def test_limits_compile_and_a_roots_limits_are_left_out_with_a_note():
    spec = demo_input()
    quotas = tuple(
        dataclasses.replace(q, borrowing_limit=2, lending_limit=1)
        if (q.tenant, q.flavor) == ("vision", "h100")
        else q
        for q in spec.quotas
    )
    loner = TenantInput(slug="loner", namespaces=("team-loner",))
    compiled = compile_cluster(
        dataclasses.replace(
            spec,
            quotas=(
                *quotas,
                QuotaInput(
                    tenant="loner", flavor="h100", resource="nvidia.com/gpu", nominal=1, borrowing_limit=3
                ),
            ),
            tenants=(*spec.tenants, loner),
        )
    )
    queues = by_name(compiled.objects, "ClusterQueue")
    gpu = next(
        g for g in queues["vision"]["spec"]["resourceGroups"] if g["coveredResources"] == ["nvidia.com/gpu"]
    )
    h100 = gpu["flavors"][0]["resources"][0]
    assert h100 == {"name": "nvidia.com/gpu", "nominalQuota": "4", "borrowingLimit": "2", "lendingLimit": "1"}
    assert "cohortName" not in queues["loner"]["spec"]
    assert queues["loner"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0] == {
        "name": "nvidia.com/gpu",
        "nominalQuota": "1",
    }
    assert any("'loner' is a root" in note for note in compiled.notes)
    assert [e for o in compiled.objects for e in schema_errors(o) + webhook_errors(o)] == []


# --- Refused whole, with a reason ---------------------------------------------------------------


def refused(spec) -> str:
    with pytest.raises(CompileError) as raised:
        compile_cluster(spec)
    return str(raised.value)


def test_a_flavor_counting_ge_across_mechanisms_is_refused():
    spec = demo_input()
    mixed = FlavorInput(
        name="h100-any",
        pool="NVIDIA-H100-80GB-HBM3",
        kind="device-plugin",
        resources=(
            ResourceInput(name="nvidia.com/gpu", ge_per_unit=Fraction(1)),
            ResourceInput(name="nvidia.com/mig-3g.40gb", ge_per_unit=Fraction(1, 2)),
        ),
    )
    message = refused(dataclasses.replace(spec, flavors=(*spec.flavors, mixed)))
    assert "'h100-any' counts GE across nvidia.com/gpu, nvidia.com/mig-3g.40gb" in message
    assert "different units" in message


def test_a_flavor_whose_pool_has_no_distinguishing_node_label_is_refused():
    spec = demo_input()
    # Two pools whose nodes carry the same labels: nothing a ResourceFlavor could select one by.
    twin = next(n for n in spec.nodes if n.pool == "Tesla-T4")
    nodes = (*spec.nodes, dataclasses.replace(twin, name="twin-node", pool="twin-pool"))
    flavor = FlavorInput(
        name="twin",
        pool="twin-pool",
        kind="device-plugin",
        resources=(ResourceInput(name="nvidia.com/gpu", ge_per_unit=Fraction(1)),),
    )
    message = refused(dataclasses.replace(spec, nodes=nodes, flavors=(*spec.flavors, flavor)))
    assert "Flavor 'twin': pool 'twin-pool' has no node label" in message


def test_a_namespace_shared_by_two_tenants_is_refused():
    spec = demo_input()
    tenants = tuple(
        dataclasses.replace(t, namespaces=(*t.namespaces, "team-vision")) if t.slug == "nlp" else t
        for t in spec.tenants
    )
    message = refused(dataclasses.replace(spec, tenants=tenants))
    assert "Namespace 'team-vision' is owned by tenants nlp, vision" in message


def test_every_problem_is_reported_at_once_and_nothing_is_compiled():
    spec = demo_input()
    tenants = tuple(
        dataclasses.replace(t, namespaces=("team-vision",)) if t.slug == "infra" else t for t in spec.tenants
    )
    queues = tuple(
        dataclasses.replace(q, reclaim_within_cohort="LowerOrNewerEqualPriority")
        if (q.tenant, q.name) == ("nlp", "default")
        else q
        for q in spec.queues
    )
    with pytest.raises(CompileError) as raised:
        compile_cluster(dataclasses.replace(spec, tenants=tenants, queues=queues))
    assert len(raised.value.problems) == 2
    assert any("LowerOrNewerEqualPriority" in p for p in raised.value.problems)


def test_two_flavors_kueue_cannot_tell_apart_are_refused():
    spec = demo_input()
    h100 = next(f for f in spec.flavors if f.name == "h100")
    again = dataclasses.replace(h100, name="h100-again")
    quota = QuotaInput(tenant="nlp", flavor="h100-again", resource="nvidia.com/gpu", nominal=1)
    message = refused(dataclasses.replace(spec, flavors=(*spec.flavors, again), quotas=(*spec.quotas, quota)))
    assert "Flavors 'h100' and 'h100-again' select the same nodes and both count nvidia.com/gpu" in message


def test_reclaim_never_with_borrowing_preemption_is_refused_as_kueue_would():
    spec = demo_input()
    queues = tuple(
        dataclasses.replace(q, reclaim_within_cohort="Never", borrow_within_cohort="LowerPriority")
        if (q.tenant, q.name) == ("nlp", "default")
        else q
        for q in spec.queues
    )
    assert "reclaimWithinCohort Never" in refused(dataclasses.replace(spec, queues=queues))


def test_a_fractional_queue_weight_is_a_kueue_quantity():
    spec = demo_input()
    queues = tuple(
        dataclasses.replace(q, weight=Decimal("0.500")) if (q.tenant, q.name) == ("nlp", "default") else q
        for q in spec.queues
    )
    nlp = by_name(compile_cluster(dataclasses.replace(spec, queues=queues)).objects, "ClusterQueue")["nlp"]
    assert nlp["spec"]["fairSharing"] == {"weight": "0.5"}
    assert schema_errors(nlp) == []
