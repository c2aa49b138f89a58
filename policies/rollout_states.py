"""The one state machine of a rollout (docs/agents.md, "Rollouts and node states"); a node's delivery
has its own (policies/node_states.py).

Pure: no Django. The driver (policies/services/rollouts.py), the platform-admin's controls
(policies/services/rollout_controls.py) and the driver-managed MIG stop
(policies/services/mig_ownership.py) all move a rollout's state through ``transition``, so a finished
rollout cannot be resumed, nor a paused one succeed, by a quiet assignment somewhere. The values are
``policies.models.RolloutState``'s.
"""

from __future__ import annotations

from enum import StrEnum

RUNNING, PAUSED, SUCCEEDED, FAILED, CANCELLED = "running", "paused", "succeeded", "failed", "cancelled"


class RolloutEvent(StrEnum):
    PAUSE = "pause"  # a platform-admin holds it
    RESUME = "resume"  # a platform-admin lets it go on
    SUCCEED = "succeed"  # every present node applied and verified its revision
    FAIL = "fail"  # a node failed for good (the driver rolls back unless it was a roll back)
    ABORT = "abort"  # a platform-admin stops it for good, or a roll back replaces it
    # The driver found the pool's MIG owned by the NVIDIA DRA driver (DynamicMIG) while the revision
    # drives mig-parted: stopped for good, as an abort, but by the platform.
    STOP_DRIVER_MANAGED = "stop_driver_managed"


_ACTIVE = frozenset({RUNNING, PAUSED})

# (event) -> (states it may happen in, the state it leads to)
_TABLE: dict[RolloutEvent, tuple[frozenset[str], str]] = {
    RolloutEvent.PAUSE: (frozenset({RUNNING}), PAUSED),
    RolloutEvent.RESUME: (frozenset({PAUSED}), RUNNING),
    RolloutEvent.SUCCEED: (frozenset({RUNNING}), SUCCEEDED),
    RolloutEvent.FAIL: (frozenset({RUNNING}), FAILED),
    RolloutEvent.ABORT: (_ACTIVE, CANCELLED),
    # Only a running one: the driver does not pass over a paused rollout, and stops it on the first
    # pass after it is resumed.
    RolloutEvent.STOP_DRIVER_MANAGED: (frozenset({RUNNING}), CANCELLED),
}


class IllegalRolloutTransition(ValueError):
    def __init__(self, state: str, event: RolloutEvent) -> None:
        super().__init__(f"a rollout in state {state} cannot take event {event}")
        self.state = state
        self.event = event


def transition(state: str, event: RolloutEvent) -> str:
    """The state ``event`` leads to from ``state``; IllegalRolloutTransition when it may not happen."""
    allowed, target = _TABLE[event]
    if str(state) not in allowed:
        raise IllegalRolloutTransition(str(state), event)
    return target


def can(state: str, event: RolloutEvent) -> bool:
    return str(state) in _TABLE[event][0]
