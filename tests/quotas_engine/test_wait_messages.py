"""What a waiting request is told, word for word, and the figures its decision carries: the API and
the UI show these messages as they are. Cast: vision under org, whole H100s (1 GE each); the
snapshot's clock is 24 hours before the month ends (builders.NOW)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from fractions import Fraction

import pytest

from quotas.admission import (
    BudgetSpec,
    FlavorResource,
    FlavorSpec,
    Outcome,
    PendingRequest,
    QueueingStrategy,
    QuotaSpec,
    Reason,
    Snapshot,
    TenantNode,
    decide,
    schedule,
)

from .builders import H100, gpus, holding, request, snapshot

TEAM = {"org": None, "vision": "org"}


@pytest.mark.parametrize("how", ["pass", "decide"])
def test_a_request_behind_a_strict_head_is_told_which_request_it_waits_for_and_what_it_would_cost(how):
    # given: a StrictFIFO queue; vision (4 nominal) holds 2. Its head "v1" asks 4 (only 2 available),
    # and behind it "v2" asks 2 GPUs for 3 hours
    active = [holding("v0", "vision", 2, order=1)]
    pending = [request("v1", "vision", 4, order=2), request("v2", "vision", 2, order=3, hours=3)]
    snap = snapshot(
        tree=TEAM,
        quotas=[gpus("vision", 4)],
        active=active,
        pending=pending,
        strategy=QueueingStrategy.STRICT_FIFO,
    )
    # when: the scheduling pass, or deciding v2 alone
    if how == "pass":
        v2 = {d.request_id: d for d in schedule(snapshot=snap)}["v2"]
    else:
        v2 = decide(snapshot=snap, request_id="v2")
    # then: v1 waits for quota, and v2, which would fit, waits behind it: 2 GE on h100, 2 x 3 = 6
    # GE-h expected this month
    assert (v2.outcome, v2.reason) == (Outcome.WAIT, Reason.BLOCKED_BY_QUEUE_HEAD)
    assert v2.message == "StrictFIFO queue 'vision-q' waits for 'v1'"
    assert (v2.flavor, v2.ge, v2.expected_ge_hours) == ("h100", 2, 6)
    # and the head itself is told about its quota, not about a head
    head = decide(snapshot=snap, request_id="v1")
    assert head.message == "not enough quota for 'vision' in 'h100': nvidia.com/gpu asked 4, 2 available"


def test_a_request_awaiting_approval_is_told_so():
    # given: a request for 2 GPUs for 3 hours that needs approval, not yet given
    pending = [request("v1", "vision", 2, order=1, hours=3, approval=True)]
    snap = snapshot(tree=TEAM, quotas=[gpus("vision", 4)], pending=pending)
    # when
    d = decide(snapshot=snap, request_id="v1")
    # then
    assert (d.outcome, d.reason) == (Outcome.WAIT, Reason.AWAITING_APPROVAL)
    assert d.message == "the request needs approval before it can be admitted"
    # and what it would cost once approved: 2 GE on h100, 2 x 3 = 6 GE-h
    assert (d.flavor, d.ge, d.expected_ge_hours) == ("h100", 2, 6)


def test_an_over_budget_message_gives_a_fractional_figure_to_two_decimals():
    # given: vision's hard monthly budget is 10 GE-h, 9 burned; it asks 1 GPU for 90 minutes
    budget = BudgetSpec(
        tenant="vision", flavor=None, limit_ge_hours=Fraction(10), burned_ge_hours=Fraction(9), hard=True
    )
    pending = [dataclasses.replace(request("v1", "vision", 1, order=1), duration=timedelta(minutes=90))]
    snap = snapshot(tree=TEAM, quotas=[gpus("vision", 4)], pending=pending, budgets=[budget])
    # when
    d = decide(snapshot=snap, request_id="v1")
    # then: 1 GE x 1.5 h = 3/2 GE-h; 9 + 3/2 = 10.5 > 10
    assert d.expected_ge_hours == Fraction(3, 2)
    assert (d.outcome, d.reason) == (Outcome.WAIT, Reason.OVER_BUDGET)
    assert d.message == (
        "1.50 GE-h expected + 9 GE-h burned or committed exceeds the 10 GE-h monthly budget of 'vision' "
        "(all flavors)"
    )


MIG_3G = "nvidia.com/mig-3g.40gb"
MIG_1G = "nvidia.com/mig-1g.10gb"


def mig_flavor(name: str) -> FlavorSpec:
    return FlavorSpec(
        name=name,
        gpu_model="H100",
        resources=(
            FlavorResource(name=MIG_3G, ge_per_unit=Fraction(1, 2)),
            FlavorResource(name=MIG_1G, ge_per_unit=Fraction(1, 7)),
        ),
    )


def slices(amounts: dict[str, int], *fallback: str) -> PendingRequest:
    req = request("m1", "vision", 1, order=1, flavor="mig-a", resource=MIG_3G)
    return dataclasses.replace(req, amounts=amounts, fallback_flavors=fallback)


def mig_snapshot(req: PendingRequest, quotas: list[QuotaSpec]) -> Snapshot:
    return snapshot(
        tree=TEAM,
        quotas=quotas,
        free={"mig-a": {MIG_3G: 8, MIG_1G: 8}},
        pending=[req],
        flavors=(H100, mig_flavor("mig-a"), mig_flavor("mig-b")),
    )


def test_a_request_no_quota_could_ever_hold_is_told_which_resource_exceeds_and_by_how_much():
    # given: on mig-a vision has 4 slices of 3g.40gb and 7 of 1g.10gb (no parent quota, nothing to
    # borrow: at most 4 and 7 ever). It asks 7 of 1g.10gb and 9 of 3g.40gb
    quotas = [
        QuotaSpec(tenant="vision", flavor="mig-a", resource=MIG_3G, nominal=4),
        QuotaSpec(tenant="vision", flavor="mig-a", resource=MIG_1G, nominal=7),
    ]
    snap = mig_snapshot(slices({MIG_1G: 7, MIG_3G: 9}), quotas)
    # when
    d = decide(snapshot=snap, request_id="m1")
    # then: 7 of 7 could be granted and is not mentioned; 9 > 4 is
    assert (d.outcome, d.reason) == (Outcome.WAIT, Reason.EXCEEDS_MAX_POSSIBLE)
    assert d.message == (
        "exceeds what any quota could hold: nvidia.com/mig-3g.40gb: asked 9, at most 4 could ever be granted"
    )


def test_a_request_no_flavor_could_ever_hold_is_told_what_each_flavor_lacks():
    # given: vision has 4 slices of 3g.40gb on mig-a and no quota at all on mig-b. It asks 9 slices
    # of 3g.40gb and none of 1g.10gb, on mig-a, else mig-b
    quotas = [QuotaSpec(tenant="vision", flavor="mig-a", resource=MIG_3G, nominal=4)]
    snap = mig_snapshot(slices({MIG_1G: 0, MIG_3G: 9}, "mig-b"), quotas)
    # when
    d = decide(snapshot=snap, request_id="m1")
    # then: the 1g.10gb it does not ask for is no limit (though vision has no quota for it); 9 > 4 on
    # mig-a, and mig-b has no 3g.40gb quota for vision
    assert (d.outcome, d.reason) == (Outcome.WAIT, Reason.EXCEEDS_MAX_POSSIBLE)
    assert d.message == (
        "exceeds what any quota could hold: nvidia.com/mig-3g.40gb: asked 9, at most 4 could ever be "
        "granted in 'mig-a'; nvidia.com/mig-3g.40gb: no quota in 'mig-b'"
    )


def test_a_request_in_a_priority_class_its_tenant_may_not_use_is_told_so():
    # given: vision may use only the "normal" class; it asks 1 GPU at "high"
    snap = snapshot(
        tree=TEAM, quotas=[gpus("vision", 4)], pending=[request("v1", "vision", 1, order=1, prio="high")]
    )
    tenants = (
        TenantNode(id="org"),
        TenantNode(id="vision", parent="org", allowed_priority_classes=frozenset({"normal"})),
    )
    snap = dataclasses.replace(snap, tenants=tenants)
    # when
    d = decide(snapshot=snap, request_id="v1")
    # then
    assert (d.outcome, d.reason) == (Outcome.WAIT, Reason.PRIORITY_CLASS_NOT_ALLOWED)
    assert d.message == "tenant 'vision' may not use priority class 'high'"


def test_a_flavor_budget_counts_what_the_same_pass_admitted_before():
    # given: vision's hard budget for h100 alone is 3 GE-h, none burned; two requests of 2 GPUs for
    # 1 hour each (2 GE-h each)
    budget = BudgetSpec(
        tenant="vision", flavor="h100", limit_ge_hours=Fraction(3), burned_ge_hours=Fraction(0), hard=True
    )
    pending = [request("v1", "vision", 2, order=1), request("v2", "vision", 2, order=2)]
    snap = snapshot(tree=TEAM, quotas=[gpus("vision", 4)], pending=pending, budgets=[budget])
    # when: one pass decides both
    decisions = {d.request_id: d for d in schedule(snapshot=snap)}
    # then: v1 commits 2 <= 3; v2 would make 2 + 2 = 4 > 3
    assert decisions["v1"].outcome is Outcome.ADMIT
    assert (decisions["v2"].outcome, decisions["v2"].reason) == (Outcome.WAIT, Reason.OVER_BUDGET)
    assert decisions["v2"].message == (
        "2 GE-h expected + 2 GE-h burned or committed exceeds the 3 GE-h monthly budget of 'vision' "
        "(flavor 'h100')"
    )


def test_a_parents_soft_budget_admits_with_a_warning_naming_whose_budget_it_is():
    # given: org has a soft all-flavor budget of 2 GE-h (none burned); vision, under org, asks 3
    # GPUs for 1 hour: 3 GE-h
    budget = BudgetSpec(
        tenant="org", flavor=None, limit_ge_hours=Fraction(2), burned_ge_hours=Fraction(0), hard=False
    )
    snap = snapshot(
        tree=TEAM, quotas=[gpus("vision", 4)], pending=[request("v1", "vision", 3, order=1)], budgets=[budget]
    )
    # when
    d = decide(snapshot=snap, request_id="v1")
    # then: 0 + 3 > 2, but the budget is soft: admitted, with the warning
    assert d.outcome is Outcome.ADMIT
    assert [(w.code, w.message) for w in d.warnings] == [
        (
            "soft_budget_exceeded",
            "3 GE-h expected + 0 GE-h burned or committed exceeds the 2 GE-h monthly budget of 'org' "
            "(all flavors, which covers 'vision')",
        )
    ]


def test_a_parents_hard_flavor_budget_holds_a_childs_request():
    # given: org has a hard budget of 2 GE-h for h100 (1 burned); vision asks 2 GPUs for 1 hour
    budget = BudgetSpec(
        tenant="org", flavor="h100", limit_ge_hours=Fraction(2), burned_ge_hours=Fraction(1), hard=True
    )
    snap = snapshot(
        tree=TEAM, quotas=[gpus("vision", 4)], pending=[request("v1", "vision", 2, order=1)], budgets=[budget]
    )
    # when
    d = decide(snapshot=snap, request_id="v1")
    # then: 1 + 2 = 3 > 2
    assert (d.outcome, d.reason) == (Outcome.WAIT, Reason.OVER_BUDGET)
    assert d.message == (
        "2 GE-h expected + 1 GE-h burned or committed exceeds the 2 GE-h monthly budget of 'org' "
        "(flavor 'h100', which covers 'vision')"
    )


def test_a_multi_resource_request_is_told_each_resource_it_is_short_of():
    # given: on mig-a vision has 7 slices of 1g.10gb (4 held) and 8 of 3g.40gb (4 held), at its own
    # priority; plenty free
    quotas = [
        QuotaSpec(tenant="vision", flavor="mig-a", resource=MIG_1G, nominal=7),
        QuotaSpec(tenant="vision", flavor="mig-a", resource=MIG_3G, nominal=8),
    ]
    held = holding("m0", "vision", 1, order=1, flavor="mig-a")
    held = dataclasses.replace(held, amounts={MIG_1G: 4, MIG_3G: 4})
    pending = [
        dataclasses.replace(slices({MIG_1G: 3, MIG_3G: 5}), id="exact-1g"),
        dataclasses.replace(slices({MIG_1G: 4, MIG_3G: 5}), id="both-short"),
    ]
    snap = dataclasses.replace(mig_snapshot(pending[0], quotas), active=(held,), pending=tuple(pending))
    # then: 3 of 3 available 1g slices is no shortfall; 5 > 4 3g slices is
    d = decide(snapshot=snap, request_id="exact-1g")
    assert d.message == (
        "not enough quota for 'vision' in 'mig-a': nvidia.com/mig-3g.40gb asked 5, 4 available"
    )
    # and with 4 > 3 1g slices both are listed
    d = decide(snapshot=snap, request_id="both-short")
    assert d.message == (
        "not enough quota for 'vision' in 'mig-a': nvidia.com/mig-1g.10gb asked 4, 3 available, "
        "nvidia.com/mig-3g.40gb asked 5, 4 available"
    )


def test_a_multi_resource_request_is_told_the_free_capacity_of_each_resource_it_asks_for():
    # given: vision's quota on mig-a is ample (7 and 8), but only 1 3g.40gb slice and no 1g.10gb
    # slice are free
    quotas = [
        QuotaSpec(tenant="vision", flavor="mig-a", resource=MIG_1G, nominal=7),
        QuotaSpec(tenant="vision", flavor="mig-a", resource=MIG_3G, nominal=8),
    ]
    pending = [
        dataclasses.replace(slices({MIG_1G: 0, MIG_3G: 2}), id="no-1g"),
        dataclasses.replace(slices({MIG_1G: 1, MIG_3G: 2}), id="both"),
    ]
    snap = dataclasses.replace(
        mig_snapshot(pending[0], quotas), free={"mig-a": {MIG_1G: 0, MIG_3G: 1}}, pending=tuple(pending)
    )
    # then: a resource it asks none of is not mentioned
    d = decide(snapshot=snap, request_id="no-1g")
    assert (d.outcome, d.reason) == (Outcome.WAIT, Reason.NO_PHYSICAL_FIT)
    assert d.message == (
        "quota allows it but 'mig-a' has too little free capacity: nvidia.com/mig-3g.40gb 1 free of 2 asked"
    )
    d = decide(snapshot=snap, request_id="both")
    assert d.message == (
        "quota allows it but 'mig-a' has too little free capacity: nvidia.com/mig-1g.10gb 0 free of 1 asked, "
        "nvidia.com/mig-3g.40gb 1 free of 2 asked"
    )


def test_a_request_that_preempts_past_a_soft_budget_keeps_the_warning():
    # given: vision (4 GPUs) is all held by its low-priority "low-4" for its last hour (4 GE-h still
    # to burn); vision's soft budget is 5 GE-h, none burned; no card is free. It asks 2 for 1 hour
    budget = BudgetSpec(
        tenant="vision", flavor=None, limit_ge_hours=Fraction(5), burned_ge_hours=Fraction(0), hard=False
    )
    snap = snapshot(
        tree=TEAM,
        quotas=[gpus("vision", 4)],
        free=0,
        active=[holding("low-4", "vision", 4, order=1, prio="low")],
        pending=[request("v1", "vision", 2, order=2)],
        budgets=[budget],
    )
    # when
    d = decide(snapshot=snap, request_id="v1")
    # then: 2 + 4 = 6 > 5 (checked before the eviction): admitted by preempting low-4, with the warning
    assert d.outcome is Outcome.PREEMPT
    assert [(w.code, w.message) for w in d.warnings] == [
        (
            "soft_budget_exceeded",
            "2 GE-h expected + 4 GE-h burned or committed exceeds the 5 GE-h monthly budget of 'vision' "
            "(all flavors)",
        )
    ]
