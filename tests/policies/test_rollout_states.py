"""The rollout's one state machine (policies/rollout_states.py): which events each state takes, and
that a finished rollout takes none."""

from __future__ import annotations

import pytest

from policies.models import RolloutState
from policies.rollout_states import IllegalRolloutTransition, RolloutEvent, can, transition

E = RolloutEvent


def test_a_running_rollout_pauses_succeeds_fails_aborts_or_is_stopped() -> None:
    assert transition("running", E.PAUSE) == "paused"
    assert transition("running", E.SUCCEED) == "succeeded"
    assert transition("running", E.FAIL) == "failed"
    assert transition("running", E.ABORT) == "cancelled"
    assert transition("running", E.STOP_DRIVER_MANAGED) == "cancelled"
    assert not can("running", E.RESUME)


def test_a_paused_one_resumes_or_aborts_and_nothing_else() -> None:
    assert [e for e in E if can("paused", e)] == [E.RESUME, E.ABORT]
    assert transition(RolloutState.PAUSED, E.RESUME) == RolloutState.RUNNING
    # the driver passes over a paused rollout: it is stopped on the first pass after it resumes
    with pytest.raises(IllegalRolloutTransition, match="paused cannot take event stop_driver_managed"):
        transition("paused", E.STOP_DRIVER_MANAGED)


@pytest.mark.parametrize("finished", ["succeeded", "failed", "cancelled"])
def test_a_finished_rollout_takes_no_event(finished: str) -> None:
    assert [e for e in E if can(finished, e)] == []


def test_the_states_are_the_models() -> None:
    reached = {"running"} | {transition(s, e) for s in ("running", "paused") for e in E if can(s, e)}
    assert reached == set(RolloutState.values)
