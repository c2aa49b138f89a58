"""What a snapshot's index derives once, when it is built, as a decision shows it: hours counted to the
microsecond (never rounded up to one), ... Cast: vision under org, whole H100s (1 GE each); the
snapshot's clock is 24 hours before the month ends (builders.NOW)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from fractions import Fraction

from quotas.admission import BudgetSpec, Outcome, decide

from .builders import NOW, gpus, holding, request, snapshot


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
