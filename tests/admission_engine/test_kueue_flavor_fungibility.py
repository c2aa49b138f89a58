"""Kueue's flavor fungibility, ported from pkg/scheduler/scheduler_test.go (kubernetes-sigs/kueue,
TestSchedule): a request naming an ordered list of flavors, with the queue's whenCanBorrow /
whenCanPreempt. `on-demand` is h100, `spot` is a100 here.
"""

from __future__ import annotations

from quotas.admission import FlavorFungibility, FungibilityPolicy, Outcome, decide

from .kueue import A100, H100, LOWER, NEVER, admitted, cluster, incoming, policy, quota

STOP = FungibilityPolicy.MAY_STOP_SEARCH
NEXT = FungibilityPolicy.TRY_NEXT_FLAVOR
BOTH = (H100, A100)
ON_DEMAND_THEN_SPOT = ("h100", "a100")


def test_use_second_flavor_when_the_first_has_no_preemption_candidates():
    """scheduler_test.go: "use second flavor when the first has no preemption candidates;
    WhenCanPreempt: MayStopSearch"."""
    # other-alpha: on-demand 50 (borrowing 50, nobody to borrow from), spot 100. `admitted` holds all
    # 50 on-demand at the request's priority: nobody to preempt there, so spot takes the 20
    tree = {"eng": None, "other-alpha": "eng"}
    snap = cluster(
        tree=tree,
        quotas=[
            quota("other-alpha", 50, borrowing=50),
            quota("other-alpha", 100, borrowing=0, flavor="a100"),
        ],
        active=[admitted("admitted", "other-alpha", 50)],
        pending=[incoming("other-alpha", 20, flavors=ON_DEMAND_THEN_SPOT)],
        policies={"other-alpha": policy(LOWER, NEVER)},
        fungibility={"other-alpha": FlavorFungibility(when_can_preempt=STOP)},
        flavors=BOTH,
    )
    d = decide(snapshot=snap, request_id="in")
    assert (d.outcome, d.flavor) == (Outcome.ADMIT, "a100")
    assert [(a.flavor, a.outcome) for a in d.flavor_attempts] == [("h100", "wait"), ("a100", "admit")]


def preempt_attempts(when_can_preempt):
    # preempt-attempts-cq: on-demand 1, spot 1; `blocker` (50) holds on-demand; test-wl (100) asks 1
    return cluster(
        tree={"preempt-attempts-cq": None},
        quotas=[quota("preempt-attempts-cq", 1), quota("preempt-attempts-cq", 1, flavor="a100")],
        active=[admitted("blocker", "preempt-attempts-cq", 1, prio=50)],
        pending=[incoming("preempt-attempts-cq", 1, prio=100, flavors=ON_DEMAND_THEN_SPOT)],
        policies={"preempt-attempts-cq": policy(LOWER, NEVER)},
        fungibility={"preempt-attempts-cq": FlavorFungibility(when_can_preempt=when_can_preempt)},
        flavors=BOTH,
    )


def test_admit_to_second_flavor_when_first_needs_preemption_try_next_flavor():
    """scheduler_test.go: "admit to second flavor when first needs preemption; WhenCanPreempt:
    TryNextFlavor"."""
    d = decide(snapshot=preempt_attempts(NEXT), request_id="in")
    assert (d.outcome, d.flavor, d.victims) == (Outcome.ADMIT, "a100", ())


def test_preempt_on_first_flavor_when_may_stop_search():
    """scheduler_test.go: "admit to second flavor when first needs preemption; WhenCanPreempt:
    TryNextFlavor", with MayStopSearch instead: the first flavor that can preempt is taken."""
    d = decide(snapshot=preempt_attempts(STOP), request_id="in")
    assert (d.outcome, d.flavor) == (Outcome.PREEMPT, "h100")
    assert [v.request_id for v in d.victims] == ["blocker"]
    assert [a.outcome for a in d.flavor_attempts] == ["preempt", "not_tried"]


def test_borrowing_over_preemption_borrows_in_second_flavor():
    """scheduler_test.go: "BorrowingOverPreemption preference: borrow in second flavor instead of
    preempting in first" (whenCanBorrow and whenCanPreempt TryNextFlavor)."""
    # bop-cq: on-demand 5 (held by its own low-bop), spot 0 borrowing 5; bop-lender: spot 5 idle.
    # On-demand would preempt low-bop; spot fits by borrowing: fit beats preemption
    tree = {"bop-cohort": None, "bop-cq": "bop-cohort", "bop-lender": "bop-cohort"}
    snap = cluster(
        tree=tree,
        quotas=[
            quota("bop-cq", 5, borrowing=0),
            quota("bop-cq", 0, borrowing=5, flavor="a100"),
            quota("bop-lender", 0),
            quota("bop-lender", 5, flavor="a100"),
        ],
        active=[admitted("low-bop", "bop-cq", 5, prio=-1)],
        pending=[incoming("bop-cq", 5, flavors=ON_DEMAND_THEN_SPOT)],
        policies={"bop-cq": policy(LOWER, NEVER)},
        fungibility={"bop-cq": FlavorFungibility(when_can_borrow=NEXT, when_can_preempt=NEXT)},
        flavors=BOTH,
    )
    d = decide(snapshot=snap, request_id="in")
    assert (d.outcome, d.flavor, d.victims) == (Outcome.BORROW, "a100", ())
    assert [(loan.lender, loan.amount) for loan in d.borrowed] == [("bop-lender", 5)]


def reserved_else_spot(when_can_borrow):
    # "reserved, else spot": team has 4 reserved H100s nominal and may borrow 4 more of an idle
    # sibling's; its spot A100 quota is 8 and idle. It asks 6.
    tree = {"org": None, "team": "org", "other": "org"}
    return cluster(
        tree=tree,
        quotas=[quota("team", 4), quota("other", 4), quota("team", 8, flavor="a100")],
        pending=[incoming("team", 6, flavors=ON_DEMAND_THEN_SPOT)],
        fungibility={"team": FlavorFungibility(when_can_borrow=when_can_borrow)},
        flavors=BOTH,
    )


def test_when_can_borrow_may_stop_search_borrows_on_the_first_flavor():
    """scheduler_test.go, flavor fungibility defaults (whenCanBorrow MayStopSearch, as in "not enough
    resources to borrow, fallback to next flavor" where only a flavor that cannot borrow falls back)."""
    d = decide(snapshot=reserved_else_spot(STOP), request_id="in")
    assert (d.outcome, d.flavor) == (Outcome.BORROW, "h100")


def test_when_can_borrow_try_next_flavor_prefers_a_flavor_without_borrowing():
    """scheduler_test.go, "BorrowingOverPreemption preference" family with whenCanBorrow TryNextFlavor:
    a later flavor that fits without borrowing is preferred."""
    d = decide(snapshot=reserved_else_spot(NEXT), request_id="in")
    assert (d.outcome, d.flavor) == (Outcome.ADMIT, "a100")


def test_a_request_naming_flavors_waits_with_each_flavors_reason():
    """scheduler_test.go: "flavors with mixed misconfiguration and insufficient quota" (in spirit): a
    flavor that could never hold the request is skipped, the wait explains every flavor."""
    tree = {"org": None, "team": "org"}
    snap = cluster(
        tree=tree,
        quotas=[quota("team", 4), quota("team", 2, flavor="a100")],
        active=[admitted("busy", "team", 4, prio=1)],
        pending=[incoming("team", 3, flavors=ON_DEMAND_THEN_SPOT)],
        flavors=BOTH,
    )
    d = decide(snapshot=snap, request_id="in")
    assert d.outcome is Outcome.WAIT
    assert d.flavor == "h100"
    assert [(a.flavor, a.outcome) for a in d.flavor_attempts] == [("h100", "wait"), ("a100", "exceeds")]
    assert "h100:" in d.message and "a100:" in d.message
