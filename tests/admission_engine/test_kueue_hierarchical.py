"""Kueue's hierarchical preemption table, ported: pkg/scheduler/preemption/preemption_hierarchical_test.go
(kubernetes-sigs/kueue, TestHierarchicalPreemptions). Cohorts are tenants with children; every
ClusterQueue there is withinClusterQueue LowerPriority, reclaimWithinCohort Any unless a case says
more. A ClusterQueue without quota of its own has a 0 nominal row here (our tenants need a row).
"""

from __future__ import annotations

from quotas.admission import Outcome, decide

from .kueue import admitted, cluster, incoming, policy, quota


def victims(d):
    return sorted(v.request_id for v in d.victims)


def test_preempt_with_hierarchical_advantage():
    """preemption_hierarchical_test.go: "preempt with hierarchical advantage"."""
    #      r
    #    /   \
    #  c(2)  q_borrowing(0)
    #   |
    #  q(0)
    # q asks 2: it fits c's quota, so q_borrowing's 2 (borrowed from c) go, at equal priority
    tree = {"r": None, "c": "r", "q": "c", "q_borrowing": "r"}
    snap = cluster(
        tree=tree,
        quotas=[quota("c", 2), quota("q", 0), quota("q_borrowing", 0)],
        active=[admitted("admitted2", "q_borrowing", 2)],
        pending=[incoming("q", 2)],
    )
    d = decide(snapshot=snap, request_id="in")
    assert victims(d) == ["admitted2"]
    assert [v.cause for v in d.victims] == ["reclaim"]


def test_avoid_queues_within_nominal_quota():
    """preemption_hierarchical_test.go: "avoid queues within nominal quota"."""
    # q_nominal's -10 job is within its own 2: never a candidate, though lower
    tree = {"r": None, "c": "r", "q": "c", "q_borrowing": "r", "q_nominal": "r"}
    snap = cluster(
        tree=tree,
        quotas=[quota("c", 2), quota("q", 0), quota("q_borrowing", 0), quota("q_nominal", 2)],
        active=[admitted("admitted1", "q_nominal", 2, prio=-10), admitted("admitted2", "q_borrowing", 2)],
        pending=[incoming("q", 2)],
    )
    assert victims(decide(snapshot=snap, request_id="in")) == ["admitted2"]


def test_preempt_multiple_with_hierarchical_advantage():
    """preemption_hierarchical_test.go: "preempt multiple with hierarchical advantage"."""
    # both borrowed GPUs go although they have higher priority (1, 2) than the request (0)
    tree = {"r": None, "c": "r", "q": "c", "q_borrowing": "r"}
    snap = cluster(
        tree=tree,
        quotas=[quota("c", 2), quota("q", 0), quota("q_borrowing", 0)],
        active=[
            admitted("admitted1", "q_borrowing", 1, prio=1),
            admitted("admitted2", "q_borrowing", 1, prio=2),
        ],
        pending=[incoming("q", 2)],
    )
    assert victims(decide(snapshot=snap, request_id="in")) == ["admitted1", "admitted2"]


def test_preempt_in_cohort_and_own_cq():
    """preemption_hierarchical_test.go: "preempt in cohort and own CQ" (q: borrowWithinCohort
    LowerPriority, maxPriorityThreshold 0)."""
    # c(3) -> q(0), q_same_cohort(0). q asks 2 at priority 1: admitted_preemptible (0 <= threshold)
    # may go while q borrows, admitted_not_preemptible (1, not lower) may not; q's own -1 job too
    tree = {"r": None, "c": "r", "q": "c", "q_same_cohort": "c"}
    snap = cluster(
        tree=tree,
        quotas=[quota("c", 3), quota("q", 0), quota("q_same_cohort", 0)],
        active=[
            admitted("admitted_not_preemptible", "q_same_cohort", 1, prio=1),
            admitted("admitted_preemptible", "q_same_cohort", 1, prio=0),
            admitted("admitted_own_queue", "q", 1, prio=-1),
        ],
        pending=[incoming("q", 2, prio=1)],
        policies={"q": policy(borrow_within_cohort=True, threshold=0)},
    )
    assert victims(decide(snapshot=snap, request_id="in")) == ["admitted_own_queue", "admitted_preemptible"]


def test_prefer_to_preempt_hierarchical_candidate():
    """preemption_hierarchical_test.go: "prefer to preempt hierarchical candidate"."""
    # the borrower (priority 1) goes before q's own -2 job: hierarchy candidates come first
    tree = {"r": None, "c": "r", "q": "c", "q_borrowing": "r"}
    snap = cluster(
        tree=tree,
        quotas=[quota("c", 2), quota("q", 0), quota("q_borrowing", 0)],
        active=[
            admitted("admitted_borrowing", "q_borrowing", 1, prio=1),
            admitted("admitted_same_queue", "q", 1, prio=-2),
        ],
        pending=[incoming("q", 1)],
    )
    assert victims(decide(snapshot=snap, request_id="in")) == ["admitted_borrowing"]


def test_forced_to_preempt_priority_candidate():
    """preemption_hierarchical_test.go: "forced to preempt priority candidate" (q: borrowWithinCohort
    LowerPriority, maxPriorityThreshold 0)."""
    # r -> c(2) -> q(0), q_same_cohort(0); r -> q_nominal(2). q cannot fit c's 2 (q_same_cohort holds
    # them), so it has no advantage; q_nominal is within its quota; q_same_cohort's -1 job goes
    tree = {"r": None, "c": "r", "q": "c", "q_same_cohort": "c", "q_nominal": "r"}
    snap = cluster(
        tree=tree,
        quotas=[quota("c", 2), quota("q", 0), quota("q_same_cohort", 0), quota("q_nominal", 2)],
        active=[
            admitted("admitted_nominal", "q_nominal", 2, prio=-10),
            admitted("admitted_same_cohort", "q_same_cohort", 2, prio=-1),
        ],
        pending=[incoming("q", 2)],
        policies={"q": policy(borrow_within_cohort=True, threshold=0)},
    )
    d = decide(snapshot=snap, request_id="in")
    assert victims(d) == ["admitted_same_cohort"]
    assert [v.cause for v in d.victims] == ["reclaim_while_borrowing"]


def test_respect_lending_limits():
    """preemption_hierarchical_test.go: "respect lending limits"."""
    # q: 3 nominal, lends 2 (keeps 1); c: 2 + 2 = 4. q_borrowing holds 4 (priority 0). q asks 5 at -2:
    # 5 - 1 kept = 4 fits c's 4, so q has the advantage and the higher-priority borrower goes
    tree = {"r": None, "c": "r", "q": "c", "q_borrowing": "r"}
    snap = cluster(
        tree=tree,
        quotas=[quota("c", 2), quota("q", 3, lending=2), quota("q_borrowing", 0)],
        active=[admitted("admitted_borrowing", "q_borrowing", 4)],
        pending=[incoming("q", 5, prio=-2)],
    )
    d = decide(snapshot=snap, request_id="in")
    assert d.outcome is Outcome.PREEMPT
    assert victims(d) == ["admitted_borrowing"]
