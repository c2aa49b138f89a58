"""Which relatives a request may evict, and when an earlier eviction makes a later one pointless:
Kueue's candidateIsValid on trees deeper than one level and on departments that hold requests
themselves. Cast: whole H100s (1 GE each); every number is worked out in the comments.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import pytest

from quotas.admission import (
    AdmissionPolicy,
    BorrowWithinCohort,
    BorrowWithinCohortPolicy,
    Outcome,
    PreemptionPolicy,
    QuotaSpec,
    Reason,
    Victim,
    decide,
    schedule,
)

from .builders import GPU, ONE_G, THREE_G, gpus, h100_mig_flavor, holding, request, snapshot


def test_a_department_borrowing_for_its_own_request_is_reclaimed_by_its_team():
    # given: org 2 -> dept 0 -> team 1 (lent up to dept). dept's pool is 1, org's 2 + 1 = 3. dept
    # itself holds 2 (1 beyond its pool, borrowed from org); the two cards are all there is
    tree = {"org": None, "dept": "org", "team": "dept"}
    snap = snapshot(
        tree=tree,
        quotas=[gpus("org", 2), gpus("dept", 0), gpus("team", 1)],
        free=0,
        active=[holding("d0", "dept", 2, order=1)],
        pending=[request("t1", "team", 1, order=2)],
    )
    # when: team asks its 1 (org: 3 - 2 = 1 available, but no card is free)
    d = decide(snapshot=snap, request_id="t1")
    # then: team's request fits in its own quota, so dept, beyond its pool, must give the card back
    assert d.outcome is Outcome.PREEMPT
    assert d.victims == (
        Victim(
            request_id="d0", tenant="dept", priority=500, amounts={GPU: 2}, ge=Fraction(2), cause="reclaim"
        ),
    )


def test_once_a_department_is_back_within_its_pool_its_other_teams_keep_their_requests():
    # given: org -> dept-a 1 -> a1 0, a2 0; org -> team-b 3; org -> team-c 0. Pools: dept-a 1, org
    # 1 + 3 = 4. a1 and a2 hold 1 each (dept-a uses 2 of its 1), team-c holds 1: org uses 3. All are
    # low priority; a1 was admitted last, then a2, then team-c's
    tree = {"org": None, "dept-a": "org", "a1": "dept-a", "a2": "dept-a", "team-b": "org", "team-c": "org"}
    quotas = [gpus("dept-a", 1), gpus("a1", 0), gpus("a2", 0), gpus("team-b", 3), gpus("team-c", 0)]
    active = [
        holding("c0", "team-c", 1, order=1, prio="low"),
        holding("a2-0", "a2", 1, order=2, prio="low"),
        holding("a1-0", "a1", 1, order=3, prio="low"),
    ]
    snap = snapshot(tree=tree, quotas=quotas, active=active, pending=[request("b3", "team-b", 3, order=4)])
    # when: team-b asks its 3 (org: 4 - 3 = 1 available)
    d = decide(snapshot=snap, request_id="b3")
    # then: candidates in order a1-0 (latest), a2-0, c0. Evicting a1-0 brings dept-a to 1 of its 1:
    # a2 still holds 1 beyond its 0, but its department is within its pool, so a2-0 stays; c0 goes,
    # and org has 4 - 1 = 3 available
    assert d.outcome is Outcome.PREEMPT
    assert [(v.request_id, v.cause) for v in d.victims] == [("a1-0", "reclaim"), ("c0", "reclaim")]


@pytest.mark.parametrize(
    "v0_created",
    [
        None,  # created before v1: its admission order 1 stands for its creation order
        2,  # created at the same point as v1 (a tie): not newer than v1 either
    ],
)
def test_under_lower_or_newer_equal_priority_a_request_may_not_evict_one_of_its_priority_not_newer(
    v0_created,
):
    # given: vision has 2 GPUs and holds them with v0 (normal); no card is free. Its queue may evict
    # its own lower-priority requests, or equal-priority ones created after the evicting request
    policy = AdmissionPolicy(within_tenant=PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY)
    v0 = dataclasses.replace(holding("v0", "vision", 2, order=1), created_order=v0_created)
    snap = snapshot(
        tree={"org": None, "vision": "org"},
        quotas=[gpus("vision", 2)],
        free=0,
        active=[v0],
        pending=[request("v1", "vision", 1, order=2)],
        policy=policy,
    )
    # when: v1 (normal, created at 2) asks 1
    d = decide(snapshot=snap, request_id="v1")
    # then: v0 is of the same priority and not newer: it stays, and v1 waits for quota (2 - 2 = 0)
    assert (d.outcome, d.reason, d.victims) == (Outcome.WAIT, Reason.WAITING_FOR_QUOTA, ())


def test_a_relative_borrowing_only_a_resource_the_request_gets_anyway_keeps_its_requests():
    # given: an H100 in MIG mode, 1g.10gb (1/7 GE) and 3g.40gb (1/2 GE) slices. Vision has 2 1g and 1
    # 3g; speech no 1g and 1 3g. Speech holds s-one (1 1g: borrowed from vision) and, admitted later,
    # s-three (1 3g: within its own quota). 1 1g slice is free, no 3g slice
    one_g, three_g = ONE_G, THREE_G
    mig = h100_mig_flavor()
    quotas = [
        QuotaSpec(tenant="vision", flavor="mig", resource=one_g, nominal=2),
        QuotaSpec(tenant="vision", flavor="mig", resource=three_g, nominal=1),
        QuotaSpec(tenant="speech", flavor="mig", resource=one_g, nominal=0),
        QuotaSpec(tenant="speech", flavor="mig", resource=three_g, nominal=1),
    ]
    active = [
        dataclasses.replace(holding("s-three", "speech", 1, order=2, flavor="mig"), amounts={three_g: 1}),
        dataclasses.replace(holding("s-one", "speech", 1, order=1, flavor="mig"), amounts={one_g: 1}),
    ]
    ask = dataclasses.replace(
        request("x", "vision", 1, order=3, flavor="mig"), amounts={one_g: 1, three_g: 1}
    )
    snap = snapshot(
        tree={"org": None, "vision": "org", "speech": "org"},
        quotas=quotas,
        free={"mig": {one_g: 1, three_g: 0}},
        active=active,
        pending=[ask],
        flavors=(mig,),
    )
    # when: vision asks 1 1g (2 - 1 = 1 available, 1 free: exactly enough) and 1 3g (2 - 1 = 1
    # available, none free: only 3g needs a preemption)
    d = decide(snapshot=snap, request_id="x")
    # then: speech borrows 1g, not 3g, so it is not beyond its quota where it matters: nobody may go
    assert (d.outcome, d.reason, d.victims) == (Outcome.WAIT, Reason.NO_PHYSICAL_FIT, ())
    assert d.message == (
        "quota allows it but 'mig' has too little free capacity: "
        "nvidia.com/mig-1g.10gb 1 free of 1 asked, nvidia.com/mig-3g.40gb 0 free of 1 asked"
    )


def test_a_request_of_a_non_preemptible_class_is_never_evicted_even_from_a_borrower():
    # given: vision has 1 GPU; speech (quota 0) holds it with a critical (non-preemptible) request;
    # no card is free
    snap = snapshot(
        tree={"org": None, "vision": "org", "speech": "org"},
        quotas=[gpus("vision", 1), gpus("speech", 0)],
        free=0,
        active=[holding("s0", "speech", 1, order=1, prio="critical")],
        pending=[request("v1", "vision", 1, order=2, prio="high")],
    )
    # when: vision asks its 1 (reclaiming from any priority is allowed by default)
    d = decide(snapshot=snap, request_id="v1")
    # then: s0 may not be evicted: vision waits for quota (1 - 1 = 0 available)
    assert (d.outcome, d.reason, d.victims) == (Outcome.WAIT, Reason.WAITING_FOR_QUOTA, ())


def test_a_request_evicted_earlier_in_a_pass_is_not_evicted_again():
    # given: vision has 2 GPUs, lent to speech (quota 0), which holds s0 and s1 (1 each; s1 admitted
    # last); no card is free
    snap = snapshot(
        tree={"org": None, "vision": "org", "speech": "org"},
        quotas=[gpus("vision", 2), gpus("speech", 0)],
        free=0,
        active=[holding("s0", "speech", 1, order=1), holding("s1", "speech", 1, order=2)],
        pending=[request("v1", "vision", 1, order=3), request("v2", "vision", 1, order=4)],
    )
    # when: one pass decides v1, then v2
    decisions = schedule(snapshot=snap)
    # then: v1 evicts s1 (the latest) and takes its card; for v2, s1 is gone already, so s0 goes
    assert [(d.request_id, [v.request_id for v in d.victims]) for d in decisions] == [
        ("v1", ["s1"]),
        ("v2", ["s0"]),
    ]


def test_a_borrower_owed_by_its_department_reclaims_from_a_cousin_team_deep_in_the_tree():
    # given: org -> dept-a 0 -> a1 0; org -> dept-b 2 -> b1 0. Pools: dept-b 2, org 2. a1 holds a0
    # (2, borrowed from dept-b's lent quota); no card is free
    tree = {"org": None, "dept-a": "org", "a1": "dept-a", "dept-b": "org", "b1": "dept-b"}
    snap = snapshot(
        tree=tree,
        quotas=[gpus("dept-a", 0), gpus("a1", 0), gpus("dept-b", 2), gpus("b1", 0)],
        free=0,
        active=[holding("a0", "a1", 2, order=1)],
        pending=[request("b2", "b1", 2, order=2)],
    )
    # when: b1 asks 2 (it owns none: it borrows them from dept-b)
    d = decide(snapshot=snap, request_id="b2")
    # then: the 2 fit in dept-b's pool, so everything beyond its quota elsewhere under org is owed to
    # it, a0 two levels down included, and may go although b1 borrows
    assert d.outcome is Outcome.PREEMPT
    assert [(v.request_id, v.cause) for v in d.victims] == [("a0", "reclaim")]


def test_a_borrower_owed_by_its_department_reclaims_from_an_ancestor_division_beyond_its_pool():
    # given: org 1 -> div 0 -> dept-b 2 -> b1 0. Pools: dept-b 2, div 2, org 3. div itself holds d0
    # (3: 1 beyond its pool, from org); no card is free
    tree = {"org": None, "div": "org", "dept-b": "div", "b1": "dept-b"}
    snap = snapshot(
        tree=tree,
        quotas=[gpus("org", 1), gpus("div", 0), gpus("dept-b", 2), gpus("b1", 0)],
        free=0,
        active=[holding("d0", "div", 3, order=1)],
        pending=[request("b2", "b1", 2, order=2)],
    )
    # when: b1 asks 2 (org: 3 - 3 = 0 available), borrowing them from dept-b
    d = decide(snapshot=snap, request_id="b2")
    # then: the 2 fit in dept-b's pool, so div's own request beyond div's pool is owed to it
    assert d.outcome is Outcome.PREEMPT
    assert [(v.request_id, v.cause) for v in d.victims] == [("d0", "reclaim")]


def test_requests_owed_to_the_borrower_go_before_lower_priority_ones_it_may_also_take():
    # given: org -> dept-a 0 -> a1 0; org -> dept-b 4 -> b1 0, b-sib 0. Pools: dept-b 4, org 4. a1
    # holds a0 (2, normal) from dept-b's lent quota; b-sib holds s0 (2, low) from dept-b's pool; no
    # card is free. Borrowing within the cohort is allowed against lower priorities
    tree = {"org": None, "dept-a": "org", "a1": "dept-a", "dept-b": "org", "b1": "dept-b", "b-sib": "dept-b"}
    policy = AdmissionPolicy(
        borrow_within_cohort=BorrowWithinCohort(policy=BorrowWithinCohortPolicy.LOWER_PRIORITY)
    )
    snap = snapshot(
        tree=tree,
        quotas=[gpus("dept-a", 0), gpus("a1", 0), gpus("dept-b", 4), gpus("b1", 0), gpus("b-sib", 0)],
        free=0,
        active=[holding("a0", "a1", 2, order=1), holding("s0", "b-sib", 2, order=2, prio="low")],
        pending=[request("b2", "b1", 2, order=3)],
        policy=policy,
    )
    # when: b1 (normal) asks 2 (org: 4 - 4 = 0 available)
    d = decide(snapshot=snap, request_id="b2")
    # then: within dept-b the 2 do not fit b1's 0, so s0 is only a lower-priority candidate; at org
    # they fit dept-b's pool (2 + 2 <= 4), so a0 is owed to it and goes first, although of higher
    # priority than s0; evicting a0 alone is enough
    assert [(v.request_id, v.cause) for v in d.victims] == [("a0", "reclaim")]


def test_a_borrower_does_not_evict_its_own_equal_priority_request_as_if_it_were_a_relatives():
    # given: org 1 -> dept (no quota) -> vision 0. Vision holds the org's GPU with v0 (normal),
    # borrowed; no card is free
    snap = snapshot(
        tree={"org": None, "dept": "org", "vision": "dept"},
        quotas=[gpus("org", 1), gpus("vision", 0)],
        free=0,
        active=[holding("v0", "vision", 1, order=1)],
        pending=[request("v1", "vision", 1, order=2)],
    )
    # when: vision asks 1 more at the same priority
    d = decide(snapshot=snap, request_id="v1")
    # then: its own v0 may go only under its queue's own policy (lower priority only), not as a
    # relative's beyond its quota when the search walks up past dept: it waits (1 - 1 = 0 available)
    assert (d.outcome, d.reason, d.victims) == (Outcome.WAIT, Reason.WAITING_FOR_QUOTA, ())


@pytest.mark.parametrize(
    ("b1_holds", "dept_quota", "org_quota"),
    [
        # b1 holds nothing; dept-b's pool of 1 cannot take the 2: org's pool is 1 + 1 = 2, c0 uses 1
        (0, 1, 1),
        # b1 holds 2 (b0, its own priority: not evictable); dept-b's pool of 3 cannot take 2 + 2: org's
        # pool is 1 + 3 = 4, b0 and c0 use 3
        (2, 3, 1),
    ],
)
def test_a_borrower_whose_department_cannot_hold_the_request_has_no_claim_on_its_cousins(
    b1_holds, dept_quota, org_quota
):
    # given: org -> dept-b -> b1 0; org -> c 0, holding c0 (1, borrowed). One card is free
    tree = {"org": None, "dept-b": "org", "b1": "dept-b", "c": "org"}
    active = [holding("c0", "c", 1, order=1)]
    if b1_holds:
        active.append(holding("b0", "b1", b1_holds, order=2))
    snap = snapshot(
        tree=tree,
        quotas=[gpus("org", org_quota), gpus("dept-b", dept_quota), gpus("b1", 0), gpus("c", 0)],
        free=1,
        active=active,
        pending=[request("b2", "b1", 2, order=3)],
    )
    # when: b1 asks 2 (org has 1 available)
    d = decide(snapshot=snap, request_id="b2")
    # then: the 2 fit neither b1's quota nor dept-b's pool, so c0 is not owed to b1; and as b1 would
    # borrow, it may not reclaim c0 either: it waits
    assert (d.outcome, d.reason, d.victims) == (Outcome.WAIT, Reason.WAITING_FOR_QUOTA, ())


def test_a_resource_covered_by_the_requesters_own_guaranteed_quota_leaves_nothing_to_fit_above():
    # given: an H100 in MIG mode, 1g.10gb (1/7 GE) and 3g.40gb (1/2 GE) slices. org -> dept -> vision;
    # org -> c. Vision has 2 1g slices it never lends (lending limit 0) and no 3g; dept has 1 3g and
    # no 1g at all; c has no 3g and holds c0 (1 3g, borrowed from dept's lent slice). No 3g is free
    one_g, three_g = ONE_G, THREE_G
    mig = h100_mig_flavor()
    quotas = [
        QuotaSpec(tenant="vision", flavor="mig", resource=one_g, nominal=2, lending_limit=0),
        QuotaSpec(tenant="vision", flavor="mig", resource=three_g, nominal=0),
        QuotaSpec(tenant="dept", flavor="mig", resource=three_g, nominal=1),
        QuotaSpec(tenant="c", flavor="mig", resource=three_g, nominal=0),
    ]
    c0 = dataclasses.replace(holding("c0", "c", 1, order=1, flavor="mig"), amounts={three_g: 1})
    ask = dataclasses.replace(
        request("x", "vision", 1, order=2, flavor="mig"), amounts={one_g: 1, three_g: 1}
    )
    snap = snapshot(
        tree={"org": None, "dept": "org", "vision": "dept", "c": "org"},
        quotas=quotas,
        free={"mig": {one_g: 5, three_g: 0}},
        active=[c0],
        pending=[ask],
        flavors=(mig,),
    )
    # when: vision asks 1 1g (its own kept 2 cover it) and 1 3g (org: 1 - 1 = 0 available)
    d = decide(snapshot=snap, request_id="x")
    # then: the 1g needs nothing from dept, and the 3g fits dept's 1: the request fits dept's pool, so
    # c0 is owed to vision and goes, although vision borrows the 3g
    assert d.outcome is Outcome.PREEMPT
    assert [(v.request_id, v.cause) for v in d.victims] == [("c0", "reclaim")]
