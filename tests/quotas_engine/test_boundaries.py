"""Each limit met exactly, and one unit past it; preemption's minimality and no-gain rules on small
hand-worked cases. Cast: vision and speech under org, whole H100s (1 GE each); the snapshot's clock
is 24 hours before the month ends (builders.NOW)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from quotas.admission import (
    AdmissionPolicy,
    BorrowWithinCohort,
    BorrowWithinCohortPolicy,
    BudgetSpec,
    Outcome,
    QueueingStrategy,
    Reason,
    UnknownRequestError,
    decide,
    schedule,
)

from .builders import gpus, holding, request, snapshot

TEAMS = {"org": None, "vision": "org", "speech": "org"}


def budget(limit: int, burned: int = 0) -> BudgetSpec:
    return BudgetSpec(
        tenant="vision",
        flavor=None,
        limit_ge_hours=Fraction(limit),
        burned_ge_hours=Fraction(burned),
        hard=True,
    )


def test_a_request_that_spends_the_budget_exactly_is_admitted():
    # given: 100 GE-h, 40 burned, 60 left; vision asks 3 GPUs x 20 h = 60 GE-h
    pending = [request("v1", "vision", 3, order=1, hours=20)]
    snap = snapshot(tree=TEAMS, quotas=[gpus("vision", 4)], pending=pending, budgets=[budget(100, 40)])
    # when
    d = decide(snapshot=snap, request_id="v1")
    # then: 40 + 60 = 100, not over 100
    assert d.expected_ge_hours == 60
    assert d.outcome is Outcome.ADMIT


def test_one_ge_hour_past_the_budget_waits():
    # given: the same 60 left; vision asks 3 GPUs x 20 h (60 GE-h), then 1 GPU x 1 h (1 GE-h)
    pending = [request("v1", "vision", 3, order=1, hours=20), request("v2", "vision", 1, order=2, hours=1)]
    snap = snapshot(tree=TEAMS, quotas=[gpus("vision", 4)], pending=pending, budgets=[budget(100, 40)])
    # when: one pass decides both, in order
    decisions = {d.request_id: d for d in schedule(snapshot=snap)}
    # then: v1 spends the budget to 100 exactly; v2 would make it 40 + 60 + 1 = 101 > 100
    assert decisions["v1"].outcome is Outcome.ADMIT
    assert decisions["v2"].reason is Reason.OVER_BUDGET


def test_a_request_that_fills_the_quota_exactly_is_admitted_and_one_more_gpu_waits():
    # given: vision 4 nominal and no lender (speech has no quota); vision holds 1
    active = [holding("v0", "vision", 1, order=1)]
    pending = [request("v1", "vision", 3, order=2), request("v2", "vision", 4, order=3)]
    snap = snapshot(tree=TEAMS, quotas=[gpus("vision", 4)], free=10, active=active, pending=pending)
    # when / then: 1 + 3 = 4 = nominal: admitted; 1 + 4 = 5 > 4: waits
    assert decide(snapshot=snap, request_id="v1").outcome is Outcome.ADMIT
    assert decide(snapshot=snap, request_id="v2").reason is Reason.WAITING_FOR_QUOTA


def test_borrowing_up_to_the_limit_exactly_is_admitted_and_one_more_waits():
    # given: vision 2 nominal with a borrowing limit of 2; speech 4 nominal, idle
    quotas = [gpus("vision", 2, borrowing=2), gpus("speech", 4)]
    snap = snapshot(tree=TEAMS, quotas=quotas, free=10, pending=[request("v1", "vision", 4, order=1)])
    # when
    exactly = decide(snapshot=snap, request_id="v1")
    # then: 4 = 2 own + 2 borrowed, the limit exactly
    assert exactly.outcome is Outcome.BORROW
    assert [(loan.lender, loan.amount) for loan in exactly.borrowed] == [("speech", 2)]
    # given: vision holds those 4; when it asks 1 more, it would borrow 3 > 2: it waits
    held = [holding("v1", "vision", 4, order=1)]
    snap = snapshot(
        tree=TEAMS, quotas=quotas, free=6, active=held, pending=[request("v2", "vision", 1, order=2)]
    )
    assert decide(snapshot=snap, request_id="v2").reason is Reason.WAITING_FOR_QUOTA


def test_preemption_puts_back_a_victim_that_turns_out_not_to_be_needed():
    # given: vision (4 nominal, no lender) holds a 1-GPU low job and a 3-GPU normal job: 4 of 4
    active = [holding("small", "vision", 1, order=1, prio="low"), holding("big", "vision", 3, order=2)]
    pending = [request("v1", "vision", 3, order=3, prio="high")]
    snap = snapshot(tree=TEAMS, quotas=[gpus("vision", 4)], free=0, active=active, pending=pending)
    # when: a high-priority request for 3 arrives
    d = decide(snapshot=snap, request_id="v1")
    # then: candidates go lowest priority first, so "small" (1) is taken, then "big" (3): 4 freed;
    # without "small" back, 1 + 3 = 4 still fits, so only "big" is evicted
    assert d.outcome is Outcome.PREEMPT
    assert [v.request_id for v in d.victims] == ["big"]


def test_a_request_may_preempt_its_own_work_and_then_borrow_an_idle_relatives_quota():
    # given: vision (4 nominal) holds 4 at low priority, speech (4 nominal) holds 0; 8 GPUs in all,
    # 4 free
    active = [holding("low-4", "vision", 4, order=1, prio="low")]
    pending = [request("v1", "vision", 5, order=2, prio="high")]
    snap = snapshot(
        tree=TEAMS, quotas=[gpus("vision", 4), gpus("speech", 4)], free=4, active=active, pending=pending
    )
    # when: vision asks 5 at high priority
    d = decide(snapshot=snap, request_id="v1")
    # then: as it is, 4 + 5 = 9 > 8 cannot fit; evicting low-4 fits (5 <= 8), borrowing 1 of speech's
    # idle 4. Kueue restricts borrowing only for victims in other queues (issue #18, divergence 2), so
    # its own low job goes and 1 GPU is borrowed
    assert d.outcome is Outcome.PREEMPT
    assert [(v.request_id, v.cause) for v in d.victims] == [("low-4", "priority")]
    assert [(loan.lender, loan.amount) for loan in d.borrowed] == [("speech", 1)]


def test_preemption_keeps_every_victim_it_needs():
    # given: vision (4 nominal, no lender) holds a 2-GPU low job and a 2-GPU normal job: 4 of 4
    active = [holding("low-2", "vision", 2, order=1, prio="low"), holding("normal-2", "vision", 2, order=2)]
    pending = [request("v1", "vision", 4, order=3, prio="high")]
    snap = snapshot(tree=TEAMS, quotas=[gpus("vision", 4)], free=0, active=active, pending=pending)
    # when: a high-priority request for all 4 arrives
    d = decide(snapshot=snap, request_id="v1")
    # then: both go; putting "low-2" back would make 2 + 4 = 6 > 4, so it stays a victim
    assert d.outcome is Outcome.PREEMPT
    assert [v.request_id for v in d.victims] == ["low-2", "normal-2"]


def test_a_victim_put_back_holds_its_cards_again_when_the_next_is_weighed():
    # given: 4 cards, all held by vision (10 nominal, so only the cards bind): "a" and "b" low
    # (1 each, "b" admitted later), "c" normal (2)
    active = [
        holding("a", "vision", 1, order=1, prio="low"),
        holding("b", "vision", 1, order=2, prio="low"),
        holding("c", "vision", 2, order=3),
    ]
    pending = [request("v1", "vision", 3, order=4, prio="high")]
    snap = snapshot(tree=TEAMS, quotas=[gpus("vision", 10)], free=0, active=active, pending=pending)
    # when: a high-priority request for 3 cards arrives
    d = decide(snapshot=snap, request_id="v1")
    # then: greedily b, a, c are taken (1 + 1 + 2 = 4 free); "a" goes back (4 - 1 = 3 still fit), and
    # with "a" holding its card again "b" cannot (3 - 1 = 2 < 3): victims b and c
    assert [v.request_id for v in d.victims] == ["b", "c"]


def test_behind_a_strict_head_a_request_no_quota_could_hold_says_so_rather_than_blocked():
    # given: a StrictFIFO queue; vision (4 nominal) holds 2, its head asks 4 (2 available: waits),
    # and behind it a request for 9, more than vision could ever be granted (4)
    active = [holding("v0", "vision", 2, order=1)]
    pending = [request("head", "vision", 4, order=2), request("huge", "vision", 9, order=3)]
    snap = snapshot(
        tree=TEAMS,
        quotas=[gpus("vision", 4)],
        active=active,
        pending=pending,
        strategy=QueueingStrategy.STRICT_FIFO,
    )
    # when
    decisions = {d.request_id: d for d in schedule(snapshot=snap)}
    # then: the head waits for quota; "huge" is told it can never fit, not that it waits for the head
    assert decisions["head"].reason is Reason.WAITING_FOR_QUOTA
    assert decisions["huge"].reason is Reason.EXCEEDS_MAX_POSSIBLE


def test_deciding_a_request_the_snapshot_does_not_hold_names_it():
    snap = snapshot(tree=TEAMS, quotas=[gpus("vision", 4)])
    with pytest.raises(UnknownRequestError, match="no-such-request"):
        decide(snapshot=snap, request_id="no-such-request")


def test_an_eviction_gives_back_the_victims_budget_commitment_within_the_pass():
    # given: 4 cards, all held by "low-4" (low, 4 GPUs for its last hour: 4 GE-h committed); vision
    # has 10 nominal (the cards bind) and a hard budget of 6 GE-h, none burned
    active = [holding("low-4", "vision", 4, order=1, prio="low")]
    pending = [
        request("v1", "vision", 2, order=2, prio="high", hours=1),
        request("v2", "vision", 2, order=3, prio="high", hours=1),
    ]
    snap = snapshot(
        tree=TEAMS, quotas=[gpus("vision", 10)], free=0, active=active, pending=pending, budgets=[budget(6)]
    )
    # when: one pass decides both
    decisions = {d.request_id: d for d in schedule(snapshot=snap)}
    # then: v1 (2 GE-h) fits the budget, 4 + 2 = 6, and evicts low-4, whose 4 GE-h are given back:
    # 6 - 4 = 2 committed; v2 on the 2 cards left: 2 + 2 = 4 <= 6, admitted without evicting anyone
    assert [v.request_id for v in decisions["v1"].victims] == ["low-4"]
    assert decisions["v2"].outcome is Outcome.ADMIT


@pytest.mark.parametrize(
    ("speech_priority", "outcome", "victims"),
    [("normal", Outcome.WAIT, []), ("low", Outcome.PREEMPT, [("s-b", "reclaim_while_borrowing")])],
)
def test_a_borrowing_request_preempts_a_relative_only_of_strictly_lower_priority(
    speech_priority, outcome, victims
):
    # given: vision and speech have 4 each; speech holds 3 + 3 = 6, borrowing 2 of vision's. Requests
    # may preempt relatives while they borrow (borrowWithinCohort LowerPriority, no threshold)
    active = [
        holding("s-a", "speech", 3, order=1, prio=speech_priority),
        holding("s-b", "speech", 3, order=2, prio=speech_priority),
    ]
    policy = AdmissionPolicy(
        borrow_within_cohort=BorrowWithinCohort(policy=BorrowWithinCohortPolicy.LOWER_PRIORITY)
    )
    snap = snapshot(
        tree=TEAMS,
        quotas=[gpus("vision", 4), gpus("speech", 4)],
        active=active,
        pending=[request("v1", "vision", 5, order=3)],
        policy=policy,
    )
    # when: vision asks 5 at normal priority: 8 - 6 = 2 available, and it would borrow 5 - 4 = 1
    d = decide(snapshot=snap, request_id="v1")
    # then: evicting s-b (the later one) would leave 8 - 3 = 5, enough, but vision would still borrow,
    # so s-b may go only if its priority is below vision's: at equal priority vision waits
    assert d.outcome is outcome
    assert [(v.request_id, v.cause) for v in d.victims] == victims
    if outcome is Outcome.WAIT:
        assert d.message == "not enough quota for 'vision' in 'h100': nvidia.com/gpu asked 5, 2 available"


def test_a_tenant_with_a_zero_quota_may_not_reclaim_from_an_equal_priority_borrower():
    # given: the org owns 1 GPU; vision and speech have quota rows of 0. Vision holds the one card
    # (borrowed from the org). Borrowing within the cohort is allowed against lower priorities only
    policy = AdmissionPolicy(
        borrow_within_cohort=BorrowWithinCohort(policy=BorrowWithinCohortPolicy.LOWER_PRIORITY)
    )
    snap = snapshot(
        tree=TEAMS,
        quotas=[gpus("org", 1), gpus("vision", 0), gpus("speech", 0)],
        free=0,
        active=[holding("v0", "vision", 1, order=1)],
        pending=[request("s1", "speech", 1, order=2)],
        policy=policy,
    )
    # when: speech asks 1 at vision's priority
    d = decide(snapshot=snap, request_id="s1")
    # then: v0 is not of lower priority, so it may go only if speech ends within its quota; but
    # 0 + 1 > 0, speech would borrow even with v0 gone: it waits (org: 1 - 1 used = 0 available)
    assert (d.outcome, d.reason, d.victims) == (Outcome.WAIT, Reason.WAITING_FOR_QUOTA, ())
    assert d.message == "not enough quota for 'speech' in 'h100': nvidia.com/gpu asked 1, 0 available"


def test_the_first_victim_taken_goes_back_when_the_later_ones_suffice_even_while_borrowing():
    # given: 5 cards, all held by vision, which owns 1 and borrows the rest from the org's 10: "a"
    # (1, low, admitted last), "b" (2, low), "c" (2, normal)
    active = [
        holding("c", "vision", 2, order=1),
        holding("b", "vision", 2, order=2, prio="low"),
        holding("a", "vision", 1, order=3, prio="low"),
    ]
    pending = [request("v1", "vision", 4, order=4, prio="high")]
    snap = snapshot(
        tree=TEAMS, quotas=[gpus("org", 10), gpus("vision", 1)], free=0, active=active, pending=pending
    )
    # when: a high-priority request for 4 cards arrives (it borrows 3 whatever goes)
    d = decide(snapshot=snap, request_id="v1")
    # then: greedily a, b, c are taken (1 + 2 + 2 = 5 free); "b" cannot go back (5 - 2 = 3 < 4), "a"
    # can (5 - 1 = 4): victims b and c
    assert [v.request_id for v in d.victims] == ["b", "c"]
