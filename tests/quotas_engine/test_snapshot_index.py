"""What a snapshot's index derives once, when it is built, as a decision shows it: hours counted to the
microsecond (never rounded up to one), each fallback flavor's GE worked out for that flavor, positions
counted within each cohort. Cast: vision under org, whole H100s (1 GE each); the snapshot's clock is
24 hours before the month ends (builders.NOW)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from fractions import Fraction

from quotas.admission import BudgetSpec, FlavorResource, FlavorSpec, Outcome, decide

from .builders import GPU, H100, NOW, gpus, holding, request, snapshot

A100 = FlavorSpec(
    name="a100", gpu_model="A100", resources=(FlavorResource(name=GPU, ge_per_unit=Fraction(1, 2)),)
)
L4 = FlavorSpec(name="l4", gpu_model="L4", resources=(FlavorResource(name=GPU, ge_per_unit=Fraction(1, 4)),))


def test_work_shorter_than_an_hour_commits_only_its_fraction_of_a_ge_hour():
    # given: vision's budget is 5/4 GE-h, nothing burned; 1 GPU runs for its last 15 minutes (1/4
    # GE-h still to burn); vision asks 2 GPUs for 30 minutes (2 x 1/2 = 1 GE-h)
    running = dataclasses.replace(holding("v0", "vision", 1, order=1), ends_at=NOW + timedelta(minutes=15))
    asked = dataclasses.replace(request("v1", "vision", 2, order=2), duration=timedelta(minutes=30))
    budget = BudgetSpec(
        tenant="vision", flavor=None, limit_ge_hours=Fraction(5, 4), burned_ge_hours=Fraction(0), hard=True
    )
    snap = snapshot(
        tree={"org": None, "vision": "org"},
        quotas=[gpus("vision", 4)],
        active=[running],
        pending=[asked],
        budgets=[budget],
    )
    # when
    d = decide(snapshot=snap, request_id="v1")
    # then: 1/4 + 1 = 5/4, exactly the budget
    assert (d.outcome, d.expected_ge_hours, d.message) == (
        Outcome.ADMIT,
        Fraction(1),
        "admitted within the quota of 'vision' in 'h100'",
    )


def test_a_request_admitted_on_its_second_fallback_flavor_costs_that_flavors_ge():
    # given: vision has 2 GPUs of each of h100 (1 GE each), a100 (1/2) and l4 (1/4) and holds all its
    # h100s and a100s; it asks 2 GPUs for 1 hour, h100 first, then a100, then l4
    def on(flavor: str, nominal: int):
        return dataclasses.replace(gpus("vision", nominal), flavor=flavor)

    asked = dataclasses.replace(request("v2", "vision", 2, order=3), fallback_flavors=("a100", "l4"))
    snap = snapshot(
        tree={"org": None, "vision": "org"},
        flavors=(H100, A100, L4),
        quotas=[on("h100", 2), on("a100", 2), on("l4", 2)],
        free={"h100": {GPU: 8}, "a100": {GPU: 8}, "l4": {GPU: 8}},
        active=[holding("v0", "vision", 2, order=1), holding("v1", "vision", 2, order=2, flavor="a100")],
        pending=[asked],
    )
    # when
    d = decide(snapshot=snap, request_id="v2")
    # then: admitted on l4 after a100 was weighed, at 2 x 1/4 GE, not a100's 2 x 1/2
    assert (d.outcome, d.flavor, d.ge, d.expected_ge_hours) == (
        Outcome.ADMIT,
        "l4",
        Fraction(1, 2),
        Fraction(1, 2),
    )


def test_requests_are_numbered_within_their_own_cohort_not_across_cohorts():
    # given: two separate organisations, a (team a1) and b (team b1); a1's request came first, then
    # b1's two
    snap = snapshot(
        tree={"a": None, "a1": "a", "b": None, "b1": "b"},
        quotas=[gpus("a1", 4), gpus("b1", 4)],
        pending=[
            request("x", "a1", 1, order=1),
            request("y", "b1", 1, order=2),
            request("z", "b1", 1, order=3),
        ],
    )
    # when
    positions = {
        rid: (d.queue_position, d.cohort_position)
        for rid in ("x", "y", "z")
        for d in [decide(snapshot=snap, request_id=rid)]
    }
    # then: b1's first request is first in b's cohort, whatever a's cohort holds
    assert positions == {"x": (1, 1), "y": (1, 1), "z": (2, 2)}
