"""Moving a snapshot forward (`advance`, `release`): the capacity and the allocations the next
decisions see. Cast: vision under org; whole H100s (1 GE each), or MIG slices where said; the
snapshot's clock is 24 hours before the month ends (builders.NOW)."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

from quotas.admission import (
    AdmissionPolicy,
    FlavorResource,
    FlavorSpec,
    Outcome,
    PreemptionPolicy,
    QuotaSpec,
    Reason,
    advance,
    decide,
    release,
    schedule,
)

from .builders import GPU, H100, gpus, holding, request, snapshot

TEAM = {"org": None, "vision": "org"}
MIG_3G = "nvidia.com/mig-3g.40gb"
MIG_1G = "nvidia.com/mig-1g.10gb"
H100_MIG = FlavorSpec(
    name="h100-mig",
    gpu_model="H100",
    resources=(
        FlavorResource(name=MIG_3G, ge_per_unit=Fraction(1, 2)),
        FlavorResource(name=MIG_1G, ge_per_unit=Fraction(1, 7)),
    ),
)


def test_an_older_request_approved_late_may_preempt_a_newer_one_of_equal_priority_admitted_meanwhile():
    # given: vision has 4 GPUs and preempts its own work of lower priority, or of equal priority
    # created later (LowerOrNewerEqualPriority). "old" (created first) awaits approval; "new"
    # (created second) asks the same 4
    policy = AdmissionPolicy(within_tenant=PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY)
    old = request("old", "vision", 4, order=1, approval=True)
    snap = snapshot(
        tree=TEAM, quotas=[gpus("vision", 4)], free=4, pending=[old, request("new", "vision", 4, order=2)]
    )
    snap = dataclasses.replace(snap, policy=policy)
    # when: a pass admits "new" (the only admissible one) and is carried out
    after = advance(snapshot=snap, decisions=schedule(snapshot=snap))
    # then: "new" is the pool's first admission, and remembers it was created second
    assert [(a.request_id, a.admitted_order, a.created_order) for a in after.active] == [("new", 1, 2)]
    assert after.free == {"h100": {GPU: 0}}
    # when: "old" is approved
    approved = dataclasses.replace(after, pending=(dataclasses.replace(old, approved=True),))
    d = decide(snapshot=approved, request_id="old")
    # then: created 1 < 2, equal priority: the older request takes its 4 GPUs back from "new"
    assert d.outcome is Outcome.PREEMPT
    assert [(v.request_id, v.cause) for v in d.victims] == [("new", "priority")]


def test_a_resource_a_request_asks_none_of_stays_with_nothing_free_once_it_is_admitted():
    # given: an H100 in MIG mode with 2 free 3g.40gb slices and no 1g.10gb slice free (the snapshot
    # lists none); vision has quota for 4 and 7 of them. "m1" asks one 3g.40gb and zero 1g.10gb
    quotas = [
        QuotaSpec(tenant="vision", flavor="h100-mig", resource=MIG_3G, nominal=4),
        QuotaSpec(tenant="vision", flavor="h100-mig", resource=MIG_1G, nominal=7),
    ]
    m1 = dataclasses.replace(
        request("m1", "vision", 1, order=1, flavor="h100-mig", resource=MIG_3G),
        amounts={MIG_3G: 1, MIG_1G: 0},
    )
    snap = snapshot(
        tree=TEAM, quotas=quotas, free={"h100-mig": {MIG_3G: 2}}, pending=[m1], flavors=(H100, H100_MIG)
    )
    # when: m1 is admitted and the pass carried out
    after = advance(snapshot=snap, decisions=schedule(snapshot=snap))
    # then: 2 - 1 = 1 slice of 3g.40gb free, and still 0 of 1g.10gb
    assert after.free == {"h100-mig": {MIG_3G: 1, MIG_1G: 0}}
    # when: a request for one 1g.10gb slice comes next
    small = request("m2", "vision", 1, order=2, flavor="h100-mig", resource=MIG_1G)
    d = decide(snapshot=dataclasses.replace(after, pending=(small,)), request_id="m2")
    # then: its quota allows 1 of 7, but no such slice is free
    assert (d.outcome, d.reason) == (Outcome.WAIT, Reason.NO_PHYSICAL_FIT)
    assert d.message == (
        "quota allows it but 'h100-mig' has too little free capacity: "
        "nvidia.com/mig-1g.10gb 0 free of 1 asked"
    )


def test_an_allocation_that_ends_on_a_full_pool_frees_exactly_its_cards():
    # given: a pool with nothing free (the snapshot lists no flavor at all): vision's "v0" holds 4 of
    # vision's 8 GPUs; "v1" asks 5
    snap = snapshot(
        tree=TEAM,
        quotas=[gpus("vision", 8)],
        free={},
        active=[holding("v0", "vision", 4, order=1)],
        pending=[request("v1", "vision", 5, order=2)],
    )
    # when: v0 ends
    after = release(snapshot=snap, request_ids=["v0"])
    # then: its 4 cards are free, and no more: v1's 5 still do not fit
    assert after.free == {"h100": {GPU: 4}}
    assert after.active == ()
    d = decide(snapshot=after, request_id="v1")
    assert (d.outcome, d.reason) == (Outcome.WAIT, Reason.NO_PHYSICAL_FIT)
    assert (
        d.message
        == "quota allows it but 'h100' has too little free capacity: nvidia.com/gpu 4 free of 5 asked"
    )
