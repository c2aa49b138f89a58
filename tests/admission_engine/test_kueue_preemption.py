"""Kueue's classical preemption table, ported: pkg/scheduler/preemption/preemption_test.go
(kubernetes-sigs/kueue, TestPreemption). Each test names the case it ports; the ClusterQueues are
that file's `defaultClusterQueues`:

- standalone: 6 cpu, no cohort, withinClusterQueue LowerPriority;
- c1 and c2 in `cohort`: 6 cpu nominal, borrowingLimit 6 each; c1 LowerPriority/LowerPriority, c2
  withinClusterQueue Never, reclaimWithinCohort Any;
- lend1 (6, lendingLimit 4) and lend2 (6, lendingLimit 2) in `cohort-lend`, LowerPriority/LowerPriority;
- preventStarvation: 6 cpu, withinClusterQueue LowerOrNewerEqualPriority;
- `with_shared_cq`: a_standard, b_standard, a_best_effort (1 cpu, borrowingLimit 12), b_best_effort
  (0, 13), shared (10, no preemption); borrowWithinCohort LowerPriority with maxPriorityThreshold 0.
"""

from __future__ import annotations

from quotas.admission import Outcome, Reason, decide

from .kueue import ANY, LOWER, LOWER_OR_NEWER, NEVER, admitted, cluster, incoming, policy, quota

STANDALONE: dict[str, str | None] = {"standalone": None}
COHORT: dict[str, str | None] = {"cohort": None, "c1": "cohort", "c2": "cohort"}
C_QUOTAS = (quota("c1", 6, borrowing=6), quota("c2", 6, borrowing=6))
C_POLICIES = {"c1": policy(LOWER, LOWER), "c2": policy(NEVER, ANY)}
LEND: dict[str, str | None] = {"cohort-lend": None, "lend1": "cohort-lend", "lend2": "cohort-lend"}
LEND_QUOTAS = (quota("lend1", 6, lending=4), quota("lend2", 6, lending=2))
LEND_POLICIES = {"lend1": policy(LOWER, LOWER), "lend2": policy(LOWER, LOWER)}
SHARED: dict[str, str | None] = {
    "with_shared_cq": None,
    "a_standard": "with_shared_cq",
    "b_standard": "with_shared_cq",
    "a_best_effort": "with_shared_cq",
    "b_best_effort": "with_shared_cq",
    "shared": "with_shared_cq",
}
SHARED_QUOTAS = (
    quota("a_standard", 1, borrowing=12),
    quota("b_standard", 1, borrowing=12),
    quota("a_best_effort", 1, borrowing=12),
    quota("b_best_effort", 0, borrowing=13),
    quota("shared", 10),
)
SHARED_POLICIES = {
    "a_standard": policy(NEVER, LOWER, borrow_within_cohort=True, threshold=0),
    "b_standard": policy(LOWER, ANY, borrow_within_cohort=True, threshold=0),
    "a_best_effort": policy(NEVER, LOWER, borrow_within_cohort=True, threshold=0),
    "b_best_effort": policy(NEVER, LOWER, borrow_within_cohort=True, threshold=0),
    "shared": policy(NEVER, NEVER),
}


def victims(d):
    return sorted(v.request_id for v in d.victims)


def standalone(active, req):
    return cluster(
        tree=STANDALONE,
        quotas=[quota("standalone", 6)],
        active=active,
        pending=[req],
        policies={"standalone": policy(LOWER, NEVER)},
    )


def test_preempt_lowest_priority():
    """preemption_test.go: "preempt lowest priority"."""
    # 2 + 2 + 2 = 6 of 6 held; a priority-1 request for 2 evicts only the priority -1 one
    active = [
        admitted("low", "standalone", 2, prio=-1),
        admitted("mid", "standalone", 2),
        admitted("high", "standalone", 2, prio=1),
    ]
    d = decide(snapshot=standalone(active, incoming("standalone", 2, prio=1)), request_id="in")
    assert d.outcome is Outcome.PREEMPT
    assert victims(d) == ["low"]


def test_preempt_multiple():
    """preemption_test.go: "preempt multiple"."""
    # 3 are needed: low (2) is not enough, low + mid (4) is; high is not lower than 1
    active = [
        admitted("low", "standalone", 2, prio=-1),
        admitted("mid", "standalone", 2),
        admitted("high", "standalone", 2, prio=1),
    ]
    d = decide(snapshot=standalone(active, incoming("standalone", 3, prio=1)), request_id="in")
    assert victims(d) == ["low", "mid"]


def test_no_preemption_for_low_priority():
    """preemption_test.go: "no preemption for low priority"."""
    active = [admitted("low", "standalone", 3, prio=-1), admitted("mid", "standalone", 3)]
    d = decide(snapshot=standalone(active, incoming("standalone", 1, prio=-1)), request_id="in")
    assert d.outcome is Outcome.WAIT
    assert d.reason is Reason.WAITING_FOR_QUOTA


def test_not_enough_low_priority_workloads():
    """preemption_test.go: "not enough low priority workloads"."""
    # only low (3) is lower than 0; 6 - 3 = 3 < 4
    active = [admitted("low", "standalone", 3, prio=-1), admitted("mid", "standalone", 3)]
    d = decide(snapshot=standalone(active, incoming("standalone", 4)), request_id="in")
    assert d.outcome is Outcome.WAIT


def test_reclaim_quota_from_borrower():
    """preemption_test.go: "reclaim quota from borrower"."""
    # c1 holds 3, c2 holds 3 + 6 = 9 (borrows 3); the pool of 12 is full. c1 asks 3: 3 + 3 <= 6, so
    # it reclaims; c2-mid (0 < 1) goes, c2-high (1, not lower) stays, c1-low is not needed
    active = [
        admitted("c1-low", "c1", 3, prio=-1),
        admitted("c2-mid", "c2", 3),
        admitted("c2-high", "c2", 6, prio=1),
    ]
    snap = cluster(
        tree=COHORT, quotas=C_QUOTAS, active=active, pending=[incoming("c1", 3, prio=1)], policies=C_POLICIES
    )
    d = decide(snapshot=snap, request_id="in")
    assert victims(d) == ["c2-mid"]
    assert [v.cause for v in d.victims] == ["reclaim"]


def test_not_enough_workloads_borrowing():
    """preemption_test.go: "not enough workloads borrowing"."""
    # c1 holds 4, c2 holds 8 (borrows 2). c1 asks 4 -> 8 > 6: it would borrow, so c2 may only be
    # reclaimed from if c1 ends within its quota, which evicting c2 cannot bring about
    active = [
        admitted("c1-high", "c1", 4, prio=1),
        admitted("c2-low-1", "c2", 4, prio=-1),
        admitted("c2-low-2", "c2", 4, prio=-1),
    ]
    snap = cluster(
        tree=COHORT, quotas=C_QUOTAS, active=active, pending=[incoming("c1", 4, prio=1)], policies=C_POLICIES
    )
    d = decide(snapshot=snap, request_id="in")
    assert d.outcome is Outcome.WAIT
    assert d.victims == ()


def test_no_workloads_borrowing():
    """preemption_test.go: "no workloads borrowing"."""
    # c1 4 + 4 = 8 is within its borrowing limit and the pool (12 - 8 = 4 free): Kueue's table hands
    # the preemptor a Preempt assignment and finds nobody to evict; the engine sees it simply borrows
    active = [admitted("c1-high", "c1", 4, prio=1), admitted("c2-low-1", "c2", 4, prio=-1)]
    snap = cluster(
        tree=COHORT, quotas=C_QUOTAS, active=active, pending=[incoming("c1", 4, prio=1)], policies=C_POLICIES
    )
    d = decide(snapshot=snap, request_id="in")
    assert d.victims == ()
    assert d.outcome is Outcome.BORROW


def test_do_not_reclaim_borrowed_quota_from_same_priority_for_lower_priority():
    """preemption_test.go: "do not reclaim borrowed quota from same priority for
    withinCohort=ReclaimFromLowerPriority"."""
    active = [admitted("c1", "c1", 2), admitted("c2-1", "c2", 4), admitted("c2-2", "c2", 4)]
    snap = cluster(
        tree=COHORT, quotas=C_QUOTAS, active=active, pending=[incoming("c1", 4)], policies=C_POLICIES
    )
    d = decide(snapshot=snap, request_id="in")
    assert d.outcome is Outcome.WAIT


def test_reclaim_borrowed_quota_from_same_priority_for_any():
    """preemption_test.go: "reclaim borrowed quota from same priority for withinCohort=ReclaimFromAny"."""
    # c1 holds 8 (borrows 2); c2 (reclaim Any) holds 2 and asks 4: 2 + 4 <= 6; c1-1 (0) before c1-2 (1)
    active = [admitted("c1-1", "c1", 4), admitted("c1-2", "c1", 4, prio=1), admitted("c2", "c2", 2)]
    snap = cluster(
        tree=COHORT, quotas=C_QUOTAS, active=active, pending=[incoming("c2", 4)], policies=C_POLICIES
    )
    d = decide(snapshot=snap, request_id="in")
    assert victims(d) == ["c1-1"]


def test_preempt_from_all_cluster_queues_in_cohort():
    """preemption_test.go: "preempt from all ClusterQueues in cohort"."""
    # c1 holds 3 + 2, c2 3 + 4 (borrows 1); pool full. c1 asks 4: evicting c2-low (3) and its own
    # c1-low (3) leaves c1 at 2 + 4 = 6, within quota, with 12 - 6 = 6 available
    active = [
        admitted("c1-low", "c1", 3, prio=-1),
        admitted("c1-mid", "c1", 2),
        admitted("c2-low", "c2", 3, prio=-1),
        admitted("c2-mid", "c2", 4),
    ]
    snap = cluster(
        tree=COHORT, quotas=C_QUOTAS, active=active, pending=[incoming("c1", 4)], policies=C_POLICIES
    )
    d = decide(snapshot=snap, request_id="in")
    assert victims(d) == ["c1-low", "c2-low"]


def test_preempt_newer_workloads_with_the_same_priority():
    """preemption_test.go: "preempt newer workloads with the same priority" (LowerOrNewerEqualPriority)."""
    # wl2 and wl3 have the request's priority but were created after it; one of them (wl2, first by
    # Kueue's tie-break) is enough
    active = [
        admitted("wl1", "preventStarvation", 2, prio=2, created=1),
        admitted("wl2", "preventStarvation", 2, prio=1, created=200),
        admitted("wl3", "preventStarvation", 2, prio=1, created=200),
    ]
    snap = cluster(
        tree={"preventStarvation": None},
        quotas=[quota("preventStarvation", 6)],
        active=active,
        pending=[incoming("preventStarvation", 2, prio=1, created=185)],
        policies={"preventStarvation": policy(LOWER_OR_NEWER, NEVER)},
    )
    d = decide(snapshot=snap, request_id="in")
    assert victims(d) == ["wl2"]


def test_lower_priority_policy_does_not_preempt_newer_equal_priority():
    """preemption_test.go: "preempt newer workloads with the same priority", with LowerPriority
    instead: the equal-priority newer workloads are safe, so the request waits."""
    active = [
        admitted("wl1", "preventStarvation", 2, prio=2, created=1),
        admitted("wl2", "preventStarvation", 2, prio=1, created=200),
        admitted("wl3", "preventStarvation", 2, prio=1, created=200),
    ]
    snap = cluster(
        tree={"preventStarvation": None},
        quotas=[quota("preventStarvation", 6)],
        active=active,
        pending=[incoming("preventStarvation", 2, prio=1, created=185)],
        policies={"preventStarvation": policy(LOWER, NEVER)},
    )
    assert decide(snapshot=snap, request_id="in").outcome is Outcome.WAIT


def shared(active, tenant, amount, prio):
    return cluster(
        tree=SHARED,
        quotas=SHARED_QUOTAS,
        active=active,
        pending=[incoming(tenant, amount, prio=prio)],
        policies=SHARED_POLICIES,
    )


def test_borrow_within_cohort_allows_preempting_lower_priority_while_borrowing():
    """preemption_test.go: "use BorrowWithinCohort; allow preempting a lower-priority workload from
    another ClusterQueue while borrowing"."""
    # pool 1 + 1 + 1 + 0 + 10 = 13, 11 held; a_standard asks 10 (borrows 9): a_best_effort_low (-1,
    # below the threshold 0) may go although a_standard borrows
    active = [
        admitted("a_best_effort_low", "a_best_effort", 10, prio=-1),
        admitted("b_best_effort_low", "b_best_effort", 1, prio=-1),
    ]
    d = decide(snapshot=shared(active, "a_standard", 10, 0), request_id="in")
    assert victims(d) == ["a_best_effort_low"]
    assert [v.cause for v in d.victims] == ["reclaim_while_borrowing"]
    assert d.borrowed_ge == 9


def test_borrow_within_cohort_respects_max_priority_threshold_when_still_borrowing():
    """preemption_test.go: "use BorrowWithinCohort; don't allow preempting a lower-priority workload
    with priority above MaxPriorityThreshold, if borrowing is required even after the preemption"."""
    active = [admitted("b_standard", "b_standard", 10, prio=1)]
    d = decide(snapshot=shared(active, "a_standard", 10, 2), request_id="in")
    assert d.outcome is Outcome.WAIT


def test_borrow_within_cohort_above_threshold_when_no_borrowing_after():
    """preemption_test.go: "use BorrowWithinCohort; allow preempting a lower-priority workload with
    priority above MaxPriorityThreshold, if borrowing is not required after the preemption"."""
    # a_standard asks 1 of its own 1: it reclaims from b_standard whatever the threshold
    active = [admitted("b_standard", "b_standard", 13, prio=1)]
    d = decide(snapshot=shared(active, "a_standard", 1, 2), request_id="in")
    assert victims(d) == ["b_standard"]


def test_borrow_within_cohort_never_touches_own_queue_under_never():
    """preemption_test.go: "use BorrowWithinCohort; don't allow for preemption of lower-priority
    workload from the same ClusterQueue"."""
    active = [admitted("a_standard", "a_standard", 13, prio=1)]
    d = decide(snapshot=shared(active, "a_standard", 1, 2), request_id="in")
    assert d.outcome is Outcome.WAIT


def test_borrow_within_cohort_only_own_queue_when_others_above_threshold():
    """preemption_test.go: "use BorrowWithinCohort; only preempt from CQ if no workloads below
    threshold and already above nominal"."""
    active = [
        admitted("a_standard_1", "a_standard", 10, prio=1),
        admitted("a_standard_2", "a_standard", 1, prio=1),
        admitted("b_standard_1", "b_standard", 1, prio=1),
        admitted("b_standard_2", "b_standard", 1, prio=2),
    ]
    d = decide(snapshot=shared(active, "b_standard", 1, 3), request_id="in")
    assert victims(d) == ["b_standard_1"]


def test_borrow_within_cohort_own_queue_and_others_below_threshold():
    """preemption_test.go: "use BorrowWithinCohort; preempt from CQ and from other CQs with workloads
    below threshold"."""
    # a_best_effort_lower (-2) goes first; a_best_effort is then within its 1, so its other workload
    # is no candidate any more; b_standard's own mid (1 < 2) makes the second GPU
    active = [
        admitted("b_standard_high", "b_standard", 10, prio=2),
        admitted("b_standard_mid", "b_standard", 1, prio=1),
        admitted("a_best_effort_low", "a_best_effort", 1, prio=-1),
        admitted("a_best_effort_lower", "a_best_effort", 1, prio=-2),
    ]
    d = decide(snapshot=shared(active, "b_standard", 2, 2), request_id="in")
    assert victims(d) == ["a_best_effort_lower", "b_standard_mid"]


def lend(active, tenant, amount, prio):
    return cluster(
        tree=LEND,
        quotas=LEND_QUOTAS,
        active=active,
        pending=[incoming(tenant, amount, prio=prio)],
        policies=LEND_POLICIES,
    )


def test_reclaim_quota_from_lender():
    """preemption_test.go: "reclaim quota from lender"."""
    # lend1 keeps 6 - 4 = 2, lend2 keeps 4; the pool is 4 + 2 = 6. lend1 holds 3 (1 in the pool),
    # lend2 holds 7 (3 in the pool): 2 free there, lend1 asks 3 (3 + 3 <= 6: it reclaims)
    active = [
        admitted("lend1-low", "lend1", 3, prio=-1),
        admitted("lend2-mid", "lend2", 3),
        admitted("lend2-high", "lend2", 4, prio=1),
    ]
    d = decide(snapshot=lend(active, "lend1", 3, 1), request_id="in")
    assert victims(d) == ["lend2-mid"]


def test_preempt_from_all_cluster_queues_in_cohort_lend():
    """preemption_test.go: "preempt from all ClusterQueues in cohort-lend"."""
    active = [
        admitted("lend1-low", "lend1", 3, prio=-1),
        admitted("lend1-mid", "lend1", 2),
        admitted("lend2-low", "lend2", 3, prio=-1),
        admitted("lend2-mid", "lend2", 4),
    ]
    d = decide(snapshot=lend(active, "lend1", 4, 0), request_id="in")
    assert victims(d) == ["lend1-low", "lend2-low"]


def test_cannot_preempt_beyond_requestable_quota_including_lending_limit():
    """preemption_test.go: "cannot preempt from other ClusterQueues if exceeds requestable quota
    including lending limit"."""
    # lend1 can ever get its guaranteed 2 + the pool's 6 = 8 < 9
    active = [admitted("lend2-low", "lend2", 10, prio=-1)]
    d = decide(snapshot=lend(active, "lend1", 9, 0), request_id="in")
    assert d.outcome is Outcome.WAIT
    assert d.reason is Reason.EXCEEDS_MAX_POSSIBLE
