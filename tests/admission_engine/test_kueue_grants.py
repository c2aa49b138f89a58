"""Capacity requests on a kueue cluster as temporary quota raises (issue 28, item 6), in the pure
compiler: an admitted request adds its amounts to its tenant's ClusterQueue nominal quota for the
flavor and resource it holds; once it ends (the selector no longer gives it) the nominal is back.

Hand-worked numbers on the demo's organisation: vision holds 4 nvidia.com/gpu on h100 nominal.
A request of 2 admitted: 4 + 2 = 6. Two requests of 2 and 1: 4 + 2 + 1 = 7. Expired: 4 again."""

from __future__ import annotations

import dataclasses

import pytest

from quotas.kueue.compile import compile_cluster
from quotas.kueue.model import CompileError, GrantInput, TenantInput
from quotas.kueue.render import to_yaml
from tests.admission_engine.kueue_demo import demo_input
from tests.admission_engine.kueue_schema import schema_errors
from tests.admission_engine.kueue_webhooks import reference_errors, webhook_errors

GPU = "nvidia.com/gpu"


def nominal(objects, queue: str, flavor: str, resource: str = GPU) -> dict[str, str]:
    (cq,) = [o for o in objects if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == queue]
    for group in cq["spec"]["resourceGroups"]:
        for entry in group["flavors"]:
            if entry["name"] == flavor:
                return next(r for r in entry["resources"] if r["name"] == resource)
    raise AssertionError(f"{queue} has no {flavor}")


def grant(tenant: str, flavor: str, amount: int, request: str = "", resource: str = GPU) -> GrantInput:
    return GrantInput(tenant=tenant, flavor=flavor, resource=resource, amount=amount, request=request)


def test_an_admitted_request_raises_its_tenants_nominal_and_its_end_takes_it_back():
    base = demo_input()
    assert nominal(compile_cluster(base).objects, "vision", "h100")["nominalQuota"] == "4"
    # admitted: 2 H100s for vision -> 4 + 2 = 6; nlp's 4 untouched
    raised = compile_cluster(dataclasses.replace(base, grants=(grant("vision", "h100", 2, "r-one"),)))
    assert nominal(raised.objects, "vision", "h100")["nominalQuota"] == "6"
    assert nominal(raised.objects, "nlp", "h100")["nominalQuota"] == "4"
    note = "Tenant 'vision': nominal nvidia.com/gpu on 'h100' raised by 2 for admitted request(s) r-one"
    assert f"{note} (4 -> 6)." in raised.notes
    # a second one adds up: 4 + 2 + 1 = 7
    both = dataclasses.replace(
        base, grants=(grant("vision", "h100", 2, "r-one"), grant("vision", "h100", 1, "r-two"))
    )
    assert nominal(compile_cluster(both).objects, "vision", "h100")["nominalQuota"] == "7"
    # expired or released: the selector gives no grant, and the output is the catalogue's, byte for byte
    assert to_yaml(compile_cluster(dataclasses.replace(base, grants=())).objects) == to_yaml(
        compile_cluster(base).objects
    )


def test_a_raise_keeps_the_rows_limits_and_stays_valid_for_kueue():
    base = demo_input()
    quotas = tuple(
        dataclasses.replace(q, borrowing_limit=2, lending_limit=1)
        if (q.tenant, q.flavor) == ("vision", "h100")
        else q
        for q in base.quotas
    )
    compiled = compile_cluster(dataclasses.replace(base, quotas=quotas, grants=(grant("vision", "h100", 3),)))
    # 4 + 3 = 7 nominal; it may still borrow 2 and lend 1, as the row says
    assert nominal(compiled.objects, "vision", "h100") == {
        "name": GPU,
        "nominalQuota": "7",
        "borrowingLimit": "2",
        "lendingLimit": "1",
    }
    objects = list(compiled.objects)
    assert [e for o in objects for e in schema_errors(o) + webhook_errors(o)] == []
    assert reference_errors(objects) == []


def test_a_request_where_the_tenant_has_no_quota_row_gets_a_row_that_borrows_nothing():
    # recsys holds only t4-shared; its request of 1 H100 (admitted by the engine) becomes nominal 1
    # on h100 with a borrowing limit of 0: Kueue would otherwise let it borrow the cohort's H100s
    compiled = compile_cluster(dataclasses.replace(demo_input(), grants=(grant("recsys", "h100", 1),)))
    assert nominal(compiled.objects, "recsys", "h100") == {
        "name": GPU,
        "nominalQuota": "1",
        "borrowingLimit": "0",
    }
    objects = list(compiled.objects)
    assert [e for o in objects for e in schema_errors(o) + webhook_errors(o)] == []


def test_a_tenant_with_namespaces_and_no_quota_gets_a_cluster_queue_while_it_holds_a_request():
    base = demo_input()
    lone = TenantInput(slug="lab", parent="research", namespaces=("team-lab",))
    spec = dataclasses.replace(base, tenants=(*base.tenants, lone))
    assert "lab" not in {
        o["metadata"]["name"] for o in compile_cluster(spec).objects if o["kind"] == "ClusterQueue"
    }
    compiled = compile_cluster(dataclasses.replace(spec, grants=(grant("lab", "h100", 2),)))
    assert nominal(compiled.objects, "lab", "h100") == {
        "name": GPU,
        "nominalQuota": "2",
        "borrowingLimit": "0",
    }
    local = [
        o for o in compiled.objects if o["kind"] == "LocalQueue" and o["metadata"]["namespace"] == "team-lab"
    ]
    assert [o["spec"]["clusterQueue"] for o in local] == ["lab"]


def test_the_raise_does_not_depend_on_the_order_of_the_grants():
    base = demo_input()
    grants = (
        grant("vision", "h100", 2, "a"),
        grant("nlp", "h100", 1, "b"),
        grant("vision", "t4-shared", 3, "c"),
    )
    one = compile_cluster(dataclasses.replace(base, grants=grants))
    other = compile_cluster(dataclasses.replace(base, grants=tuple(reversed(grants))))
    assert to_yaml(one.objects) == to_yaml(other.objects) and one.notes == other.notes


def test_a_grant_naming_what_the_cluster_does_not_have_is_refused_whole():
    with pytest.raises(CompileError) as refused:
        compile_cluster(
            dataclasses.replace(
                demo_input(), grants=(grant("vision", "a100", 1), grant("vision", "h100", 1, resource="x/y"))
            )
        )
    text = str(refused.value)
    assert "holds a request on flavor 'a100', which is not on cluster 'demo'" in text
    assert "Flavor 'h100' counts no resource 'x/y'." in text
