"""In which order a preemption search tries "allowing borrowing" and "not borrowing" (Kueue's
classicalPreemptions), and what each gives. Cast: vision and speech under org, whole H100s (1 GE
each). Under the default policy (no borrowing within the cohort) a relative that is not owed to the
request may be evicted only if the request then ends within its own quota. Every number is worked out
in the comments.
"""

from __future__ import annotations

import dataclasses

from quotas.admission import (
    ActiveAllocation,
    AdmissionPolicy,
    BorrowWithinCohort,
    BorrowWithinCohortPolicy,
    Outcome,
    QuotaSpec,
    Reason,
    decide,
)

from .builders import ONE_G, THREE_G, gpus, h100_mig_flavor, holding, request, snapshot

TEAMS = {"org": None, "vision": "org", "speech": "org"}


def test_under_its_quota_a_tenant_first_tries_to_end_within_it_evicting_more_of_its_own():
    # given: org 2 + vision 3 = a pool of 5. Vision holds v1 and v2 (1 each, low; v1 admitted last),
    # speech (quota 0) holds s0 (1, normal, borrowed). 2 cards are free
    active = [
        holding("s0", "speech", 1, order=1),
        holding("v2", "vision", 1, order=2, prio="low"),
        holding("v1", "vision", 1, order=3, prio="low"),
    ]
    snap = snapshot(
        tree=TEAMS,
        quotas=[gpus("org", 2), gpus("vision", 3), gpus("speech", 0)],
        free=2,
        active=active,
        pending=[request("x", "vision", 3, order=4)],
    )
    # when: vision asks 3 (5 - 3 used = 2 available; 2 + 3 > 3, so it does not fit its own quota)
    d = decide(snapshot=snap, request_id="x")
    # then: vision is under its quota (2 < 3), so the search first tries to end within it: s0, then
    # v1, then v2 must go (0 + 3 <= 3); s0 is then put back (5 - 1 = 4 >= 3, 4 cards free). Evicting
    # v1 alone would let it in too, but borrowing 1: that is only the second try
    assert d.outcome is Outcome.PREEMPT
    assert [(v.request_id, v.cause) for v in d.victims] == [("v1", "priority"), ("v2", "priority")]
    assert d.borrowed == ()


def test_when_it_cannot_end_within_its_quota_a_tenant_evicts_its_own_and_borrows():
    # given: as above, but vision holds only v1 (1, low) and asks 4: 5 - 2 used = 3 available
    active = [holding("s0", "speech", 1, order=1), holding("v1", "vision", 1, order=2, prio="low")]
    snap = snapshot(
        tree=TEAMS,
        quotas=[gpus("org", 2), gpus("vision", 3), gpus("speech", 0)],
        free=3,
        active=active,
        pending=[request("x", "vision", 4, order=3)],
    )
    # when
    d = decide(snapshot=snap, request_id="x")
    # then: 4 > 3 whatever it evicts, so the no-borrowing try fails; the borrowing try may not evict
    # s0 (not owed to vision) but evicting v1 gives 5 - 1 = 4 available and 4 cards free
    assert d.outcome is Outcome.PREEMPT
    assert [v.request_id for v in d.victims] == ["v1"]
    assert [(loan.lender, loan.amount) for loan in d.borrowed] == [("org", 1)]


def test_with_borrowing_within_the_cohort_allowed_the_no_borrowing_try_still_follows_a_failed_borrowing_one():
    # given: vision 3 is the whole pool; it holds v1 (1, low); speech (quota 0) holds s0 (1, normal).
    # Borrowing within the cohort is allowed against lower priorities only. 1 card is free
    policy = AdmissionPolicy(
        borrow_within_cohort=BorrowWithinCohort(policy=BorrowWithinCohortPolicy.LOWER_PRIORITY)
    )
    snap = snapshot(
        tree=TEAMS,
        quotas=[gpus("vision", 3), gpus("speech", 0)],
        free=1,
        active=[holding("s0", "speech", 1, order=1), holding("v1", "vision", 1, order=2, prio="low")],
        pending=[request("x", "vision", 3, order=3)],
        policy=policy,
    )
    # when: vision asks 3 (3 - 2 used = 1 available)
    d = decide(snapshot=snap, request_id="x")
    # then: allowing borrowing, s0 (same priority) may not go, and v1 alone gives 2 < 3; without
    # borrowing s0 may go: s0 and v1 leave 3 available and vision within its 3
    assert d.outcome is Outcome.PREEMPT
    assert [(v.request_id, v.cause) for v in d.victims] == [("s0", "reclaim"), ("v1", "priority")]


def test_a_tenant_already_at_its_quota_may_evict_only_its_own_requests_without_borrowing_in_the_cohort():
    # given: vision 2 is the whole pool and vision holds it with v1 (2, low); speech (quota 0) still
    # holds s0 (1, normal) after a quota cut: the org uses 3 of 2. No card is free
    snap = snapshot(
        tree=TEAMS,
        quotas=[gpus("vision", 2), gpus("speech", 0)],
        free=0,
        active=[holding("s0", "speech", 1, order=1), holding("v1", "vision", 2, order=2, prio="low")],
        pending=[request("x", "vision", 2, order=3)],
    )
    # when: vision asks 2 (2 - 3 = -1 available)
    d = decide(snapshot=snap, request_id="x")
    # then: vision is not under its quota (2 of 2), so only its own v1 may go (Kueue: a queue not
    # under nominal preempts only within itself); that leaves 2 - 1 = 1 < 2: it waits. (Evicting s0
    # too would have let it in within its quota.)
    assert (d.outcome, d.reason, d.victims) == (Outcome.WAIT, Reason.WAITING_FOR_QUOTA, ())
    assert d.message == "not enough quota for 'vision' in 'h100': nvidia.com/gpu asked 2, 0 available"


def test_a_relatives_request_of_another_resource_does_not_make_the_search_try_to_avoid_borrowing():
    # given: an H100 in MIG mode, 1g.10gb (1/7 GE) and 3g.40gb (1/2 GE) slices. In 3g, org owns 2 and
    # vision 3: a pool of 5. Vision holds v1 and v2 (1 3g each, low; v1 admitted last). Speech (no
    # quota) holds s-crit (1 3g, critical: never evicted) and s-one (1 1g). 2 3g slices are free
    one_g, three_g = ONE_G, THREE_G
    mig = h100_mig_flavor()
    quotas = [
        QuotaSpec(tenant="org", flavor="mig", resource=three_g, nominal=2),
        QuotaSpec(tenant="vision", flavor="mig", resource=three_g, nominal=3),
        QuotaSpec(tenant="speech", flavor="mig", resource=three_g, nominal=0),
        QuotaSpec(tenant="speech", flavor="mig", resource=one_g, nominal=0),
    ]

    def held(rid: str, tenant: str, resource: str, order: int, prio: str) -> ActiveAllocation:
        alloc = holding(rid, tenant, 1, order=order, prio=prio, flavor="mig", resource=resource)
        return dataclasses.replace(alloc, amounts={resource: 1})

    active = [
        held("s-crit", "speech", three_g, 1, "critical"),
        held("s-one", "speech", one_g, 2, "normal"),
        held("v2", "vision", three_g, 3, "low"),
        held("v1", "vision", three_g, 4, "low"),
    ]
    snap = snapshot(
        tree=TEAMS,
        quotas=quotas,
        free={"mig": {one_g: 0, three_g: 2}},
        active=active,
        pending=[request("x", "vision", 3, order=5, flavor="mig", resource=three_g)],
        flavors=(mig,),
    )
    # when: vision asks 3 3g (5 - 3 used = 2 available)
    d = decide(snapshot=snap, request_id="x")
    # then: speech is beyond its 3g quota, but only by a request that may not go; s-one holds no 3g,
    # so no relative is a candidate and only the borrowing try is made: v1 alone leaves 5 - 2 = 3
    assert d.outcome is Outcome.PREEMPT
    assert [v.request_id for v in d.victims] == ["v1"]
