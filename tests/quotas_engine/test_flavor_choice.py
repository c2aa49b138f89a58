"""A request naming several flavors ("H100, else A100, else L4"): which one it gets, and what it is
told about each. Cast: vision under org, whole GPUs (1 GE each) on every flavor; the queue keeps
Kueue's default fungibility (take a flavor that fits, even by borrowing; try the next one before
preempting). Every number is worked out in the comments.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import pytest

from quotas.admission import (
    BudgetSpec,
    FlavorAttempt,
    FlavorResource,
    FlavorSpec,
    Outcome,
    PendingRequest,
    QuotaSpec,
    Reason,
    decide,
)

from .builders import GPU, H100, gpus, holding, request, snapshot

A100 = FlavorSpec(
    name="a100", gpu_model="A100", resources=(FlavorResource(name=GPU, ge_per_unit=Fraction(1)),)
)
L4 = FlavorSpec(name="l4", gpu_model="L4", resources=(FlavorResource(name=GPU, ge_per_unit=Fraction(1)),))
FLAVORS = (H100, A100, L4)


def on(flavor: str, tenant: str, nominal: int, *, borrowing: int | None = None) -> QuotaSpec:
    return QuotaSpec(tenant=tenant, flavor=flavor, resource=GPU, nominal=nominal, borrowing_limit=borrowing)


def falling_back(req: PendingRequest, *flavors: str) -> PendingRequest:
    return dataclasses.replace(req, fallback_flavors=flavors)


def test_a_flavor_that_could_never_hold_the_request_is_skipped_and_said_so():
    # given: on h100 vision has 2 nominal and may not borrow (at most 2 ever); on a100 and l4 it has 4.
    # It asks 3 GPUs, h100 first, else a100, else l4
    quotas = [gpus("vision", 2, borrowing=0), on("a100", "vision", 4), on("l4", "vision", 4)]
    pending = [falling_back(request("v1", "vision", 3, order=1), "a100", "l4")]
    free = {"h100": {GPU: 8}, "a100": {GPU: 8}, "l4": {GPU: 8}}
    snap = snapshot(
        tree={"org": None, "vision": "org"}, quotas=quotas, free=free, pending=pending, flavors=FLAVORS
    )
    # when
    d = decide(snapshot=snap, request_id="v1")
    # then: 3 > 2 on h100, so h100 is passed over (not a reason to stop looking); a100 holds 3 <= 4
    # within quota and is taken; l4 is never weighed
    assert (d.outcome, d.flavor) == (Outcome.ADMIT, "a100")
    assert d.message == "admitted within the quota of 'vision' in 'a100'"
    assert d.flavor_attempts == (
        FlavorAttempt(
            flavor="h100",
            outcome="exceeds",
            reason=Reason.EXCEEDS_MAX_POSSIBLE,
            message="'h100' could never hold this request",
        ),
        FlavorAttempt(
            flavor="a100",
            outcome="admit",
            reason=None,
            message="admitted within the quota of 'vision' in 'a100'",
        ),
        FlavorAttempt(flavor="l4", outcome="not_tried", reason=None, message="not needed"),
    )


def test_when_no_flavor_can_take_it_the_first_flavor_is_named_and_every_shortfall_listed():
    # given: vision has 4 on h100 (3 held) and 4 on a100 (2 held), all at its own priority, so nothing
    # it may preempt; it asks 3, h100 first, else a100
    quotas = [gpus("vision", 4), on("a100", "vision", 4)]
    active = [holding("h-3", "vision", 3, order=1), holding("a-2", "vision", 2, order=2, flavor="a100")]
    pending = [falling_back(request("v1", "vision", 3, order=3), "a100")]
    free = {"h100": {GPU: 8}, "a100": {GPU: 8}}
    snap = snapshot(
        tree={"org": None, "vision": "org"},
        quotas=quotas,
        free=free,
        active=active,
        pending=pending,
        flavors=(H100, A100),
    )
    # when
    d = decide(snapshot=snap, request_id="v1")
    # then: h100 has 4 - 3 = 1 available, a100 4 - 2 = 2, both short of 3. Two equally bad answers:
    # the first flavor's stands (the one the request prefers), and the message lists both shortfalls
    assert (d.outcome, d.flavor, d.reason) == (Outcome.WAIT, "h100", Reason.WAITING_FOR_QUOTA)
    h100_short = "not enough quota for 'vision' in 'h100': nvidia.com/gpu asked 3, 1 available"
    a100_short = "not enough quota for 'vision' in 'a100': nvidia.com/gpu asked 3, 2 available"
    assert d.message == f"no flavor can take it now: h100: {h100_short}; a100: {a100_short}"
    assert d.flavor_attempts == (
        FlavorAttempt(flavor="h100", outcome="wait", reason=Reason.WAITING_FOR_QUOTA, message=h100_short),
        FlavorAttempt(flavor="a100", outcome="wait", reason=Reason.WAITING_FOR_QUOTA, message=a100_short),
    )


def test_a_flavor_it_can_preempt_on_beats_a_later_flavor_where_it_would_only_wait():
    # given: vision has 4 on h100, all held by its own low-priority "h-low", and 4 on a100, all held
    # by "a-same" at the request's own priority; it asks 2 at normal priority, h100 first, else a100
    quotas = [gpus("vision", 4), on("a100", "vision", 4)]
    active = [
        holding("h-low", "vision", 4, order=1, prio="low"),
        holding("a-same", "vision", 4, order=2, flavor="a100"),
    ]
    pending = [falling_back(request("v1", "vision", 2, order=3), "a100")]
    snap = snapshot(
        tree={"org": None, "vision": "org"},
        quotas=quotas,
        free={"h100": {GPU: 0}, "a100": {GPU: 0}},
        active=active,
        pending=pending,
        flavors=(H100, A100),
    )
    # when
    d = decide(snapshot=snap, request_id="v1")
    # then: h100 needs a preemption, so a100 is tried first (Kueue's default), but a100 has no one
    # of lower priority to evict and waits; preempting on h100 is better than waiting
    assert (d.outcome, d.flavor, d.ge, d.warnings) == (Outcome.PREEMPT, "h100", 2, ())
    assert [(v.request_id, v.cause) for v in d.victims] == [("h-low", "priority")]
    assert (
        d.message == "admitted on 'h100' by preempting 1 request(s) of lower priority or beyond their quota"
    )
    assert [(a.flavor, a.outcome) for a in d.flavor_attempts] == [("h100", "preempt"), ("a100", "wait")]


def test_of_two_flavors_that_both_need_a_preemption_the_one_without_borrowing_is_taken():
    # given: vision and speech have 4 each on h100; vision holds 4 (critical, never preempted) plus 2
    # (low) there, so it already borrows 2 of speech's; no h100 card is free. On a100 vision has 4,
    # all held by its own low-priority "a-low", none free. Vision asks 2 at normal priority
    quotas = [gpus("vision", 4), gpus("speech", 4), on("a100", "vision", 4)]
    active = [
        holding("h-keep", "vision", 4, order=1, prio="critical"),
        holding("h-low", "vision", 2, order=2, prio="low"),
        holding("a-low", "vision", 4, order=3, prio="low", flavor="a100"),
    ]
    pending = [falling_back(request("v1", "vision", 2, order=4), "a100")]
    snap = snapshot(
        tree={"org": None, "vision": "org", "speech": "org"},
        quotas=quotas,
        free={"h100": {GPU: 0}, "a100": {GPU: 0}},
        active=active,
        pending=pending,
        flavors=(H100, A100),
    )
    # when
    d = decide(snapshot=snap, request_id="v1")
    # then: on h100 evicting h-low frees 2 cards, but vision would hold 4 + 2 = 6 > 4: it borrows 2
    # from speech. On a100 evicting a-low leaves vision 2 <= 4: no borrowing. Both preempt; the one
    # that does not borrow wins
    assert (d.outcome, d.flavor, d.borrowed) == (Outcome.PREEMPT, "a100", ())
    assert [v.request_id for v in d.victims] == ["a-low"]
    assert [(a.flavor, a.outcome) for a in d.flavor_attempts] == [("h100", "preempt"), ("a100", "preempt")]


def test_reclaiming_a_relatives_borrowed_quota_beats_preempting_its_own_work():
    # given: on h100 vision has 4, all held by its own low-priority "h-low". On a100 vision and
    # speech have 4 each and speech holds 4 + 2 = 6, borrowing 2 of vision's. No card is free. Vision
    # asks 2 at normal priority, h100 first, else a100
    quotas = [gpus("vision", 4), on("a100", "vision", 4), on("a100", "speech", 4)]
    active = [
        holding("h-low", "vision", 4, order=1, prio="low"),
        holding("s-a", "speech", 4, order=2, flavor="a100"),
        holding("s-b", "speech", 2, order=3, flavor="a100"),
    ]
    pending = [falling_back(request("v1", "vision", 2, order=4), "a100")]
    snap = snapshot(
        tree={"org": None, "vision": "org", "speech": "org"},
        quotas=quotas,
        free={"h100": {GPU: 0}, "a100": {GPU: 0}},
        active=active,
        pending=pending,
        flavors=(H100, A100),
    )
    # when
    d = decide(snapshot=snap, request_id="v1")
    # then: h100 needs h-low preempted (priority); a100 needs s-b, the latest of speech's borrowed
    # work, reclaimed (vision's own quota, 0 + 2 <= 4). Reclaiming what vision is owed is preferred
    assert (d.outcome, d.flavor) == (Outcome.PREEMPT, "a100")
    assert [(v.request_id, v.cause) for v in d.victims] == [("s-b", "reclaim")]
    assert [(a.flavor, a.outcome) for a in d.flavor_attempts] == [("h100", "preempt"), ("a100", "preempt")]


@pytest.mark.parametrize("first_flavor_blocked_by", ["budget", "cards"])
def test_a_flavor_that_cannot_take_it_now_does_not_stop_the_search(first_flavor_blocked_by):
    # given: vision has 4 on h100 and 4 on a100. Either its hard h100 budget (1 GE-h, none burned) is
    # too small, or no h100 card is free; a100 has 8 free. It asks 2 GPUs for 1 hour, h100 first
    budgets = []
    free = {"h100": {GPU: 8}, "a100": {GPU: 8}}
    if first_flavor_blocked_by == "budget":
        budgets = [
            BudgetSpec(
                tenant="vision",
                flavor="h100",
                limit_ge_hours=Fraction(1),
                burned_ge_hours=Fraction(0),
                hard=True,
            )
        ]
    else:
        free["h100"][GPU] = 0
    snap = snapshot(
        tree={"org": None, "vision": "org"},
        quotas=[gpus("vision", 4), on("a100", "vision", 4)],
        free=free,
        pending=[falling_back(request("v1", "vision", 2, order=1), "a100")],
        budgets=budgets,
        flavors=(H100, A100),
    )
    # when
    d = decide(snapshot=snap, request_id="v1")
    # then: h100 waits (2 GE-h > 1, or 0 cards free), so a100 is weighed and takes it
    assert (d.outcome, d.flavor) == (Outcome.ADMIT, "a100")
    assert [(a.flavor, a.outcome) for a in d.flavor_attempts] == [("h100", "wait"), ("a100", "admit")]
