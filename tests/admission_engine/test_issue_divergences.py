"""The three divergences of issue #18, with the engine's own builders (tests/quotas_engine), each next
to the Kueue table case it follows. Cast: org -> vision, speech (4 H100s nominal each), 8 H100s.
"""

from __future__ import annotations

from quotas.admission import Outcome, decide
from tests.quotas_engine.builders import gpus, holding, request, snapshot

TEAMS = {"org": None, "vision": "org", "speech": "org"}
FOUR_EACH = (gpus("vision", 4), gpus("speech", 4))


def victims(d):
    return sorted(v.request_id for v in d.victims)


def test_reclaim_counts_the_tenants_own_chosen_evictions():
    """Divergence 1; Kueue: preemption_test.go "preempt from all ClusterQueues in cohort"."""
    # given: vision holds 4 + 2 (borrows 2 of speech's); speech holds 1 low-priority GPU; 1 free
    active = [
        holding("v-old", "vision", 4, order=1),
        holding("v-new", "vision", 2, order=2),
        holding("s-low", "speech", 1, order=3, prio="low"),
    ]
    snap = snapshot(
        tree=TEAMS, quotas=FOUR_EACH, free=1, active=active, pending=[request("s1", "speech", 4, order=4)]
    )
    # when: speech asks for 4 (1 + 4 = 5 > 4 as things are)
    d = decide(snapshot=snap, request_id="s1")
    # then: once s-low goes too, speech is at 0 + 4 = 4, within its quota, so it may reclaim v-new
    # (the newest of vision's); the org then holds 4 + 4 = 8 and 1 + 2 + 1 = 4 GPUs are free
    assert d.outcome is Outcome.PREEMPT
    assert victims(d) == ["s-low", "v-new"]
    assert {v.request_id: v.cause for v in d.victims} == {"s-low": "priority", "v-new": "reclaim"}
    assert d.borrowed == ()


def test_borrowing_is_limited_only_for_victims_in_other_queues():
    """Divergence 2; Kueue: preemption_test.go "preempting locally and borrowing same resource in
    cohort" (a request may preempt its own lower-priority work and borrow)."""
    # given: vision holds 2 low + 2 high of its 4; speech holds 3 of its 4; 1 GPU idle
    active = [
        holding("v-low", "vision", 2, order=1, prio="low"),
        holding("v-high", "vision", 2, order=2, prio="high"),
        holding("s", "speech", 3, order=3),
    ]
    snap = snapshot(
        tree=TEAMS,
        quotas=FOUR_EACH,
        free=1,
        active=active,
        pending=[request("v1", "vision", 3, order=4, prio="high")],
    )
    # when: vision asks 3 at high priority
    d = decide(snapshot=snap, request_id="v1")
    # then: v-low goes; vision holds 2 + 3 = 5, borrowing speech's idle 1
    assert d.outcome is Outcome.PREEMPT
    assert victims(d) == ["v-low"]
    assert [(loan.lender, loan.amount) for loan in d.borrowed] == [("speech", 1)]


DEPT = {"org": None, "dept": "org", "team": "dept", "outsider": "org"}
DEPT_QUOTAS = (gpus("dept", 4), gpus("team", 0), gpus("outsider", 0))


def test_hierarchical_reclaim_within_an_ancestors_quota():
    """Divergence 3; Kueue: preemption_hierarchical_test.go "preempt with hierarchical advantage"."""
    # given: org -> dept (4) -> team (0), org -> outsider (0); the outsider holds the dept's 4
    active = [holding("out", "outsider", 4, order=1)]
    snap = snapshot(
        tree=DEPT, quotas=DEPT_QUOTAS, free=0, active=active, pending=[request("t1", "team", 4, order=2)]
    )
    # when: the team asks 4, which fits the dept's quota
    d = decide(snapshot=snap, request_id="t1")
    # then: the outsider's borrowed GPUs go back to the department
    assert victims(d) == ["out"]
    assert [v.cause for v in d.victims] == ["reclaim"]


def test_hierarchical_reclaim_prefers_the_outsider_to_the_teams_own_low_job():
    """Divergence 3, second half; Kueue: preemption_hierarchical_test.go "prefer to preempt
    hierarchical candidate"."""
    # given: the team runs 1 low-priority GPU, the outsider 3 borrowed; all 4 in use
    active = [holding("t-low", "team", 1, order=1, prio="low"), holding("out", "outsider", 3, order=2)]
    snap = snapshot(
        tree=DEPT, quotas=DEPT_QUOTAS, free=0, active=active, pending=[request("t1", "team", 3, order=3)]
    )
    # when: the team asks 3 (1 + 3 = 4 fits the dept)
    d = decide(snapshot=snap, request_id="t1")
    # then: the outsider goes, not the team's own job
    assert victims(d) == ["out"]


def test_hierarchical_reclaim_avoids_queues_within_their_quota():
    """Divergence 3; Kueue: preemption_hierarchical_test.go "avoid queues within nominal quota"."""
    # given: org -> dept (2) -> team (0); org -> borrower (0), holder (2, within it)
    tree = {"org": None, "dept": "org", "team": "dept", "borrower": "org", "holder": "org"}
    quotas = (gpus("dept", 2), gpus("team", 0), gpus("borrower", 0), gpus("holder", 2))
    active = [holding("h-low", "holder", 2, order=1, prio="low"), holding("b", "borrower", 2, order=2)]
    snap = snapshot(
        tree=tree, quotas=quotas, free=0, active=active, pending=[request("t1", "team", 2, order=3)]
    )
    # then: the borrower's 2 go; the holder's low-priority job is within its own quota
    assert victims(decide(snapshot=snap, request_id="t1")) == ["b"]


def test_hierarchical_reclaim_respects_lending_limits():
    """Divergence 3; Kueue: preemption_hierarchical_test.go "respect lending limits"."""
    # given: org -> dept (2) -> team (3, lends 2, keeps 1); org -> borrower (0) holding 4 at high
    tree = {"org": None, "dept": "org", "team": "dept", "borrower": "org"}
    quotas = (gpus("dept", 2), gpus("team", 3, lending=2), gpus("borrower", 0))
    active = [holding("b", "borrower", 4, order=1, prio="high")]
    snap = snapshot(
        tree=tree,
        quotas=quotas,
        free=1,  # 5 cards: Kueue checks quota only, so the pool is not the limit here
        active=active,
        pending=[request("t1", "team", 5, order=2, prio="low")],
    )
    # then: 5 - 1 kept = 4 fits the dept's 2 + 2 lent: the borrower goes despite its priority
    d = decide(snapshot=snap, request_id="t1")
    assert victims(d) == ["b"]
