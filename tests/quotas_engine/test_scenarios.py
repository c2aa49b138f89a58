"""Hand-worked admission scenarios. Cast: one org with two teams, vision and speech, on an H100 pool.

Every number is worked out in the comments; GPUs are whole H100s (1 GE each) unless said otherwise.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from fractions import Fraction

import pytest

from quotas.admission import (
    AdmissionPolicy,
    BudgetSpec,
    FlavorResource,
    FlavorSpec,
    Outcome,
    PreemptionPolicy,
    QueueingStrategy,
    QuotaSpec,
    Reason,
    advance,
    decide,
    fair_share,
    release,
    schedule,
)

from .builders import GPU, H100, ONE_G, THREE_G, gpus, h100_mig_flavor, holding, request, snapshot

TEAMS = {"org": None, "vision": "org", "speech": "org"}
FOUR_EACH = (gpus("vision", 4), gpus("speech", 4))


def by_id(decisions):
    return {d.request_id: d for d in decisions}


def test_it_admits_within_nominal():
    # given: vision has 4 GPUs nominal, uses none; 8 GPUs are free
    snap = snapshot(tree=TEAMS, quotas=FOUR_EACH, free=8, pending=[request("v1", "vision", 3, order=1)])
    # when
    d = decide(snapshot=snap, request_id="v1")
    # then: 3 <= 4 nominal, nothing borrowed, 3 GE
    assert d.outcome is Outcome.ADMIT
    assert d.borrowed == ()
    assert d.ge == 3
    assert d.queue_position == 1


def test_it_borrows_from_an_idle_sibling():
    # given: vision 4 nominal, speech 4 nominal and idle; vision asks 6
    snap = snapshot(tree=TEAMS, quotas=FOUR_EACH, free=8, pending=[request("v1", "vision", 6, order=1)])
    # when
    d = decide(snapshot=snap, request_id="v1")
    # then: 4 from its own nominal, 6 - 4 = 2 borrowed from speech's unused 4
    assert d.outcome is Outcome.BORROW
    assert [(loan.lender, loan.amount, loan.ge) for loan in d.borrowed] == [("speech", 2, 2)]
    assert d.borrowed_ge == 2


def test_a_sibling_reclaiming_its_nominal_preempts_the_borrower():
    # given: vision holds 4 + 2 = 6 of the org's 8, so it borrows 2 of speech's 4
    active = [holding("v-old", "vision", 4, order=1), holding("v-new", "vision", 2, order=2)]
    snap = snapshot(
        tree=TEAMS, quotas=FOUR_EACH, free=2, active=active, pending=[request("s1", "speech", 4, order=3)]
    )
    # when: speech asks for its own 4; only 8 - 6 = 2 are available
    d = decide(snapshot=snap, request_id="s1")
    # then: evicting the most recently admitted borrower (2 GPUs) frees exactly the 2 missing
    assert d.outcome is Outcome.PREEMPT
    assert [(v.request_id, v.cause) for v in d.victims] == [("v-new", "reclaim")]
    assert d.borrowed == ()


def test_reclaim_respects_lower_priority_policy_and_non_preemptible_classes():
    # given: the same borrowing vision, at the same priority as speech's request
    active = [holding("v-old", "vision", 4, order=1), holding("v-new", "vision", 2, order=2)]
    pending = [request("s1", "speech", 4, order=3)]
    lower_only = AdmissionPolicy(reclaim_within_cohort=PreemptionPolicy.LOWER_PRIORITY)
    snap = snapshot(tree=TEAMS, quotas=FOUR_EACH, free=2, active=active, pending=pending, policy=lower_only)
    # when / then: equal priority is not lower, so speech waits
    assert decide(snapshot=snap, request_id="s1").reason is Reason.WAITING_FOR_QUOTA
    # given: vision's borrowed 2 are in a non-preemptible class
    active = [holding("v-old", "vision", 4, order=1), holding("v-new", "vision", 2, order=2, prio="critical")]
    snap = snapshot(tree=TEAMS, quotas=FOUR_EACH, free=2, active=active, pending=pending)
    # when
    d = decide(snapshot=snap, request_id="s1")
    # then: v-old (4) is the only candidate; evicting it frees 4 >= 2 missing, so it goes instead
    assert [v.request_id for v in d.victims] == ["v-old"]


def test_a_borrower_never_preempts_to_borrow():
    # given: vision 4, speech 2, audio 2; speech borrows 2 of audio's (holds 4, low priority);
    # vision holds its 4 at high priority
    tree = {"org": None, "vision": "org", "speech": "org", "audio": "org"}
    quotas = (gpus("vision", 4), gpus("speech", 2), gpus("audio", 2))
    active = [
        holding("v1", "vision", 4, order=1, prio="high"),
        holding("s1", "speech", 4, order=2, prio="low"),
    ]
    snap = snapshot(
        tree=tree,
        quotas=quotas,
        free=0,
        active=active,
        pending=[request("v2", "vision", 1, order=3, prio="high")],
    )
    # when: vision asks 1 more at high priority; it would have to borrow
    d = decide(snapshot=snap, request_id="v2")
    # then: 4 + 1 > 4 nominal, so reclaim is off, and vision's own work is not lower priority
    assert d.outcome is Outcome.WAIT
    assert d.reason is Reason.WAITING_FOR_QUOTA


def test_a_high_priority_request_preempts_its_own_tenants_low_priority_work():
    # given: vision holds 4 of 4 in two low-priority requests; speech holds its 4
    active = [
        holding("v-a", "vision", 2, order=1, prio="low"),
        holding("v-b", "vision", 2, order=2, prio="low"),
        holding("s1", "speech", 4, order=3),
    ]
    pending = [request("v-urgent", "vision", 2, order=4, prio="high")]
    snap = snapshot(tree=TEAMS, quotas=FOUR_EACH, free=0, active=active, pending=pending)
    # when
    d = decide(snapshot=snap, request_id="v-urgent")
    # then: one low-priority request, the most recent, makes room
    assert d.outcome is Outcome.PREEMPT
    assert [(v.request_id, v.cause) for v in d.victims] == [("v-b", "priority")]


def test_a_lending_limit_caps_borrowing():
    # given: speech lends at most 1 of its 4; vision already uses its own 4
    quotas = (gpus("vision", 4), gpus("speech", 4, lending=1))
    active = [holding("v1", "vision", 4, order=1)]
    pending = [request("v2", "vision", 2, order=2), request("v3", "vision", 1, order=3)]
    snap = snapshot(tree=TEAMS, quotas=quotas, free=4, active=active, pending=pending)
    # when / then: org pool = 4 + 1 lent = 5, vision uses 4: 1 left, 2 does not fit
    assert decide(snapshot=snap, request_id="v2").reason is Reason.WAITING_FOR_QUOTA
    # when / then: 1 fits, borrowed from speech
    d = decide(snapshot=snap, request_id="v3")
    assert d.outcome is Outcome.BORROW
    assert [(loan.lender, loan.amount) for loan in d.borrowed] == [("speech", 1)]


def test_a_hard_budget_blocks():
    # given: 100 GE-h monthly budget, 40 burned: 60 left
    budget = BudgetSpec(
        tenant="vision", flavor=None, limit_ge_hours=Fraction(100), burned_ge_hours=Fraction(40), hard=True
    )
    pending = [request("v1", "vision", 3, order=1, hours=24)]
    snap = snapshot(tree=TEAMS, quotas=FOUR_EACH, pending=pending, budgets=[budget])
    # when
    d = decide(snapshot=snap, request_id="v1")
    # then: 3 GPUs x 24 h x 1 GE = 72 GE-h > 60 left
    assert d.expected_ge_hours == 72
    assert d.reason is Reason.OVER_BUDGET
    assert "72 GE-h expected + 40 GE-h" in d.message


def test_a_hard_budget_counts_what_active_requests_will_still_burn():
    # given: 100 GE-h budget, 40 burned, and 2 GPUs running for the month's last 24 h: 48 committed
    budget = BudgetSpec(
        tenant="vision", flavor="h100", limit_ge_hours=Fraction(100), burned_ge_hours=Fraction(40), hard=True
    )
    running = dataclasses.replace(holding("v0", "vision", 2, order=1), ends_at=None)
    snap = snapshot(
        tree=TEAMS,
        quotas=FOUR_EACH,
        active=[running],
        budgets=[budget],
        pending=[
            request("v1", "vision", 1, order=2, hours=None),
            request("v2", "vision", 1, order=3, hours=10),
        ],
    )
    # then: open-ended 1 GPU counts the 24 h left: 40 + 48 + 24 = 112 > 100; 10 h: 40 + 48 + 10 = 98
    assert decide(snapshot=snap, request_id="v1").reason is Reason.OVER_BUDGET
    assert decide(snapshot=snap, request_id="v2").outcome is Outcome.ADMIT


def test_a_soft_budget_admits_and_warns():
    # given: the same 60 GE-h left, but soft
    budget = BudgetSpec(
        tenant="vision", flavor=None, limit_ge_hours=Fraction(100), burned_ge_hours=Fraction(40), hard=False
    )
    pending = [request("v1", "vision", 3, order=1, hours=24)]
    snap = snapshot(tree=TEAMS, quotas=FOUR_EACH, pending=pending, budgets=[budget])
    # when
    d = decide(snapshot=snap, request_id="v1")
    # then: admitted, with a warning naming the overrun
    assert d.outcome is Outcome.ADMIT
    assert [w.code for w in d.warnings] == ["soft_budget_exceeded"]


@pytest.mark.parametrize(
    ("strategy", "small_outcome", "small_reason"),
    [
        (QueueingStrategy.STRICT_FIFO, Outcome.WAIT, Reason.BLOCKED_BY_QUEUE_HEAD),
        (QueueingStrategy.BEST_EFFORT_FIFO, Outcome.ADMIT, None),
    ],
)
def test_strict_fifo_blocks_behind_its_head_and_best_effort_lets_smaller_pass(
    strategy, small_outcome, small_reason
):
    # given: vision 4 nominal, speech lends nothing; vision holds 2; head asks 4, then 1 behind it
    quotas = (gpus("vision", 4), gpus("speech", 4, lending=0))
    active = [holding("v0", "vision", 2, order=1)]
    pending = [request("big", "vision", 4, order=2), request("small", "vision", 1, order=3)]
    snap = snapshot(tree=TEAMS, quotas=quotas, active=active, pending=pending, strategy=strategy)
    # when
    result = by_id(schedule(snapshot=snap))
    # then: the head needs 4 with 2 available and waits; the small one is blocked or passes
    assert result["big"].reason is Reason.WAITING_FOR_QUOTA
    assert result["small"].outcome is small_outcome
    assert result["small"].reason is small_reason
    assert decide(snapshot=snap, request_id="small").reason is small_reason


def test_requests_awaiting_approval_do_not_block_a_strict_queue():
    # given: the head of a StrictFIFO queue needs approval
    pending = [request("big", "vision", 2, order=1, approval=True), request("small", "vision", 1, order=2)]
    snap = snapshot(tree=TEAMS, quotas=FOUR_EACH, pending=pending, strategy=QueueingStrategy.STRICT_FIFO)
    # when
    result = by_id(schedule(snapshot=snap))
    # then: the unapproved one has no position and waits; the next one is the head and is admitted
    assert result["big"].reason is Reason.AWAITING_APPROVAL
    assert result["big"].queue_position is None
    assert result["small"].outcome is Outcome.ADMIT
    assert result["small"].queue_position == 1


def test_fair_share_splits_borrowed_capacity_by_weight():
    # given: a 6-GPU pool owned by the org; vision (weight 2) and speech (weight 1) own nothing and
    # each ask 6 x 1 GPU, interleaved in time
    tree = {"org": None, "vision": "org", "speech": "org"}
    quotas = (gpus("org", 6), gpus("vision", 0), gpus("speech", 0))
    pending = [request(f"v{i}", "vision", 1, order=2 * i) for i in range(6)]
    pending += [request(f"s{i}", "speech", 1, order=2 * i + 1) for i in range(6)]
    snap = snapshot(tree=tree, quotas=quotas, pending=pending, weights={"vision": 2, "speech": 1})
    # when
    decisions = schedule(snapshot=snap)
    # then: shares are borrowed/6/weight; ties go to the older request:
    # v0 1/12 | s0 1/6 vs v1 1/6 -> s0 (older) | v1 1/6 | v2 1/4 | s1 1/3 vs v3 1/3 -> s1 | v3 1/3
    admitted = [d.request_id for d in decisions if d.admitted]
    assert admitted == ["v0", "s0", "v1", "v2", "s1", "v3"]
    assert all(d.outcome is Outcome.BORROW for d in decisions if d.admitted)
    assert sum(d.tenant == "vision" for d in decisions if d.admitted) == 4  # 2 : 1


def test_mig_slices_count_by_dominant_share():
    # given: 3g.40gb on an H100 takes 3 of 7 compute and 4 of 8 memory slices: max(3/7, 1/2) = 1/2 GE
    mig = "nvidia.com/mig-3g.40gb"
    flavor = FlavorSpec(
        name="h100-mig", gpu_model="H100", resources=(FlavorResource(name=mig, ge_per_unit=Fraction(1, 2)),)
    )
    quota = QuotaSpec(tenant="vision", flavor="h100-mig", resource=mig, nominal=4)
    budget = BudgetSpec(
        tenant="vision", flavor=None, limit_ge_hours=Fraction(20), burned_ge_hours=Fraction(6), hard=True
    )
    pending = [request("m1", "vision", 3, order=1, hours=10, flavor="h100-mig", resource=mig)]
    snap = snapshot(
        tree={"vision": None},
        quotas=[quota],
        pending=pending,
        budgets=[budget],
        free={"h100-mig": {mig: 14}},
        flavors=(H100, flavor),
    )
    # when
    d = decide(snapshot=snap, request_id="m1")
    # then: 3 slices = 3/2 GE; 10 h = 15 GE-h; 6 + 15 = 21 > 20, over budget by one GE-h
    assert d.ge == Fraction(3, 2)
    assert d.expected_ge_hours == 15
    assert d.reason is Reason.OVER_BUDGET


def test_release_then_schedule_admits_by_priority_then_fifo():
    # given: vision holds all 4 of its GPUs (speech lends nothing); three requests wait
    quotas = (gpus("vision", 4), gpus("speech", 4, lending=0))
    pending = [
        request("low-old", "vision", 2, order=1, prio="low"),
        request("high-late", "vision", 2, order=3, prio="high"),
        request("high-early", "vision", 1, order=2, prio="high"),
    ]
    active = [holding("v0", "vision", 4, order=1, prio="critical")]
    snap = snapshot(tree=TEAMS, quotas=quotas, free=4, active=active, pending=pending)
    assert not any(d.admitted for d in schedule(snapshot=snap))
    # when: the 4 GPUs are released and the loop runs again
    decisions = schedule(snapshot=release(snapshot=snap, request_ids=["v0"]))
    # then: high-early (1) and high-late (2) fit in 4; low-old needs 2 of the 1 left and waits
    assert [(d.request_id, d.outcome) for d in decisions] == [
        ("high-early", Outcome.ADMIT),
        ("high-late", Outcome.ADMIT),
        ("low-old", Outcome.WAIT),
    ]
    assert decisions[2].queue_position == 3


def test_exceeds_max_possible():
    # given: vision 4 nominal + borrowing limit 2 = at most 6; speech 4
    quotas = (gpus("vision", 4, borrowing=2), gpus("speech", 4))
    pending = [request("v7", "vision", 7, order=1), request("v6", "vision", 6, order=2)]
    pending += [request("x1", "vision", 1, order=3, flavor="h100-mig", resource="nvidia.com/mig-3g.40gb")]
    mig = FlavorSpec(
        name="h100-mig",
        resources=(FlavorResource(name="nvidia.com/mig-3g.40gb", ge_per_unit=Fraction(1, 2)),),
    )
    snap = snapshot(tree=TEAMS, quotas=quotas, pending=pending, flavors=(H100, mig))
    # then: 7 > min(4 + 2, 8) = 6 can never fit; 6 borrows 2; no quota row at all is the same
    assert decide(snapshot=snap, request_id="v7").reason is Reason.EXCEEDS_MAX_POSSIBLE
    assert decide(snapshot=snap, request_id="v6").outcome is Outcome.BORROW
    assert decide(snapshot=snap, request_id="x1").reason is Reason.EXCEEDS_MAX_POSSIBLE


def test_physical_capacity_is_checked_after_quota():
    # given: quota would allow 4, but only 3 GPUs are free in the pool
    snap = snapshot(tree=TEAMS, quotas=FOUR_EACH, free=3, pending=[request("v1", "vision", 4, order=1)])
    # then
    assert decide(snapshot=snap, request_id="v1").reason is Reason.NO_PHYSICAL_FIT


def test_a_deep_tree_borrows_through_a_departments_borrowing_limit():
    # given: org -> dept (may borrow 1 from org) -> team-a (2), team-b (0); org -> dept2 (4, idle)
    tree = {"org": None, "dept": "org", "team-a": "dept", "team-b": "dept", "dept2": "org"}
    quotas = (
        QuotaSpec(tenant="dept", flavor="h100", resource=GPU, nominal=0, borrowing_limit=1),
        gpus("team-a", 2),
        gpus("team-b", 0),
        gpus("dept2", 4),
    )
    pending = [request("a4", "team-a", 4, order=1), request("a3", "team-a", 3, order=2)]
    snap = snapshot(tree=tree, quotas=quotas, pending=pending)
    # then: dept's subtree holds 2, plus 1 from above = 3 at most; 4 never fits
    assert decide(snapshot=snap, request_id="a4").reason is Reason.EXCEEDS_MAX_POSSIBLE
    # and 3 borrows 1, credited to dept2's idle quota one level up
    d = decide(snapshot=snap, request_id="a3")
    assert d.outcome is Outcome.BORROW
    assert [(loan.lender, loan.amount) for loan in d.borrowed] == [("dept2", 1)]


def test_positions_in_queue_and_cohort():
    # given: two teams' requests at mixed priorities
    pending = [
        request("v1", "vision", 1, order=1),
        request("s1", "speech", 1, order=2, prio="high"),
        request("v2", "vision", 1, order=3, prio="high"),
    ]
    snap = snapshot(tree=TEAMS, quotas=FOUR_EACH, pending=pending)
    # then: queue order is priority then FIFO; the cohort ranks all three the same way
    decided = {rid: decide(snapshot=snap, request_id=rid) for rid in ("v1", "s1", "v2")}
    positions = {rid: (d.queue_position, d.cohort_position) for rid, d in decided.items()}
    assert positions == {"v2": (1, 2), "v1": (2, 3), "s1": (1, 1)}


def test_advance_carries_out_decisions():
    # given: the reclaim scenario
    active = [holding("v-old", "vision", 4, order=1), holding("v-new", "vision", 2, order=2)]
    snap = snapshot(
        tree=TEAMS, quotas=FOUR_EACH, free=2, active=active, pending=[request("s1", "speech", 4, order=3)]
    )
    # when
    after = advance(snapshot=snap, decisions=schedule(snapshot=snap))
    # then: v-new evicted, s1 active with the next admission order, free = 2 + 2 - 4 = 0
    assert sorted((a.request_id, a.admitted_order) for a in after.active) == [("s1", 3), ("v-old", 1)]
    assert after.pending == ()
    assert after.free["h100"][GPU] == 0
    assert after.active[-1].ends_at == snap.now + timedelta(hours=1)


def test_a_tenants_fair_share_is_what_it_borrows_over_its_trees_pool():
    # given: the org owns a 6-GPU pool; vision and speech own nothing. Vision holds 2 GPUs, all
    # borrowed from the pool; speech holds none
    tree = {"org": None, "vision": "org", "speech": "org"}
    quotas = (gpus("org", 6), gpus("vision", 0), gpus("speech", 0))
    snap = snapshot(tree=tree, quotas=quotas, active=[holding("v0", "vision", 2, order=1)])
    # then: vision's dominant share is 2 / 6 = 1/3; speech borrows nothing
    assert fair_share(snapshot=snap, tenant="vision") == Fraction(1, 3)
    assert fair_share(snapshot=snap, tenant="speech") == 0
    # and a tenant with no quota row at all has a share of 0
    lab = snapshot(tree={**tree, "lab": "org"}, quotas=quotas)
    assert fair_share(snapshot=lab, tenant="lab") == 0


def test_a_fair_share_over_mig_slices_takes_the_dominant_resource_in_ge():
    # given: an H100 in MIG mode: 1g.10gb is 1/7 GE, 3g.40gb 1/2 GE. Vision has 7 1g and 1 3g slices,
    # speech 21 1g slices: the org's pool is 28 x 1/7 = 4 GE of 1g, 1 x 1/2 = 1/2 GE of 3g.
    # Vision holds 14 1g slices (7 borrowed) and its 1 3g slice
    one_g, three_g = ONE_G, THREE_G
    mig = h100_mig_flavor()
    quotas = [
        QuotaSpec(tenant="vision", flavor="mig", resource=one_g, nominal=7),
        QuotaSpec(tenant="vision", flavor="mig", resource=three_g, nominal=1),
        QuotaSpec(tenant="speech", flavor="mig", resource=one_g, nominal=21),
    ]
    held = dataclasses.replace(
        holding("v0", "vision", 1, order=1, flavor="mig"), amounts={one_g: 14, three_g: 1}
    )
    snap = snapshot(tree=TEAMS, quotas=quotas, active=[held], free={}, flavors=(H100, mig))
    # then: borrowed 7 x 1/7 = 1 GE of 1g, none of 3g; pool max(4, 1/2) = 4 GE: share 1/4
    assert fair_share(snapshot=snap, tenant="vision") == Fraction(1, 4)


def test_a_fair_share_over_a_pool_smaller_than_one_ge_is_taken_of_that_pool():
    # given: the org owns 3 1g.10gb slices (3/7 GE); vision owns none and holds 1 slice (1/7 GE)
    one_g = "nvidia.com/mig-1g.10gb"
    mig = FlavorSpec(name="mig", resources=(FlavorResource(name=one_g, ge_per_unit=Fraction(1, 7)),))
    quotas = [
        QuotaSpec(tenant="org", flavor="mig", resource=one_g, nominal=3),
        QuotaSpec(tenant="vision", flavor="mig", resource=one_g, nominal=0),
    ]
    held = holding("v0", "vision", 1, order=1, flavor="mig", resource=one_g)
    snap = snapshot(tree=TEAMS, quotas=quotas, active=[held], free={}, flavors=(mig,))
    # then: (1/7) / (3/7) = 1/3, not 1/7 as if the pool were 1 GE
    assert fair_share(snapshot=snap, tenant="vision") == Fraction(1, 3)


def test_a_tenant_over_a_cut_quota_in_a_tree_with_no_pool_has_a_share_of_zero():
    # given: vision's quota was cut to 0 while it holds 1 GPU; nobody in the tree has any quota, so
    # there is no pool to take a share of
    snap = snapshot(tree=TEAMS, quotas=[gpus("vision", 0)], active=[holding("v0", "vision", 1, order=1)])
    # then: it borrows 1, but of a pool of 0: no share is computed (0, not 1 as over a 1-GPU pool)
    assert fair_share(snapshot=snap, tenant="vision") == 0
