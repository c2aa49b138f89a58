"""What a waiting request is told, word for word, and the figures its decision carries: the API and
the UI show these messages as they are. Cast: vision under org, whole H100s (1 GE each); the
snapshot's clock is 24 hours before the month ends (builders.NOW)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from fractions import Fraction

from quotas.admission import BudgetSpec, Outcome, QueueingStrategy, Reason, decide, schedule

from .builders import gpus, holding, request, snapshot

TEAM = {"org": None, "vision": "org"}


def test_a_request_behind_a_strict_head_is_told_which_request_it_waits_for_and_what_it_would_cost():
    # given: a StrictFIFO queue; vision (4 nominal) holds 2. Its head "v1" asks 4 (only 2 available),
    # and behind it "v2" asks 2 GPUs for 3 hours
    active = [holding("v0", "vision", 2, order=1)]
    pending = [request("v1", "vision", 4, order=2), request("v2", "vision", 2, order=3, hours=3)]
    snap = snapshot(
        tree=TEAM,
        quotas=[gpus("vision", 4)],
        active=active,
        pending=pending,
        strategy=QueueingStrategy.STRICT_FIFO,
    )
    # when: the scheduling pass
    decisions = {d.request_id: d for d in schedule(snapshot=snap)}
    # then: v1 waits for quota, and v2, which would fit, waits behind it: 2 GE on h100, 2 x 3 = 6
    # GE-h expected this month
    v2 = decisions["v2"]
    assert (v2.outcome, v2.reason) == (Outcome.WAIT, Reason.BLOCKED_BY_QUEUE_HEAD)
    assert v2.message == "StrictFIFO queue 'vision-q' waits for 'v1'"
    assert (v2.flavor, v2.ge, v2.expected_ge_hours) == ("h100", 2, 6)


def test_a_request_awaiting_approval_is_told_so():
    # given: a request for 1 GPU that needs approval, not yet given
    pending = [request("v1", "vision", 1, order=1, approval=True)]
    snap = snapshot(tree=TEAM, quotas=[gpus("vision", 4)], pending=pending)
    # when
    d = decide(snapshot=snap, request_id="v1")
    # then
    assert (d.outcome, d.reason) == (Outcome.WAIT, Reason.AWAITING_APPROVAL)
    assert d.message == "the request needs approval before it can be admitted"


def test_an_over_budget_message_gives_a_fractional_figure_to_two_decimals():
    # given: vision's hard monthly budget is 10 GE-h, 9 burned; it asks 1 GPU for 90 minutes
    budget = BudgetSpec(
        tenant="vision", flavor=None, limit_ge_hours=Fraction(10), burned_ge_hours=Fraction(9), hard=True
    )
    pending = [dataclasses.replace(request("v1", "vision", 1, order=1), duration=timedelta(minutes=90))]
    snap = snapshot(tree=TEAM, quotas=[gpus("vision", 4)], pending=pending, budgets=[budget])
    # when
    d = decide(snapshot=snap, request_id="v1")
    # then: 1 GE x 1.5 h = 3/2 GE-h; 9 + 3/2 = 10.5 > 10
    assert d.expected_ge_hours == Fraction(3, 2)
    assert (d.outcome, d.reason) == (Outcome.WAIT, Reason.OVER_BUDGET)
    assert d.message == (
        "1.50 GE-h expected + 9 GE-h burned or committed exceeds the 10 GE-h monthly budget of 'vision' "
        "(all flavors)"
    )
