"""The one state machine of a node's policy delivery (docs/agents.md, "Rollout states").

Pure: no Django. The rollout driver, the agent API and the offline sweep all move a node's state
through ``transition``, so an illegal move (applied straight to blocked, say) is an error in one place
rather than a quiet inconsistency in three.
"""

from __future__ import annotations

from datetime import timedelta
from enum import StrEnum

from gpuplatform.backoff import backoff_seconds


class NodeState(StrEnum):
    PENDING = "pending"  # a desired revision waits to be delivered
    APPLYING = "applying"  # the agent has it and is applying
    APPLIED = "applied"  # the agent acked the desired revision's hash
    FAILED = "failed"  # the agent reported failure (retried with backoff)
    BLOCKED = "blocked"  # a planned MIG change waits for GPU pods to leave the node
    OFFLINE = "offline"  # no heartbeat for AGENT_OFFLINE_AFTER seconds
    DRIFT = "drift"  # the applied hash is not the desired one


class Event(StrEnum):
    ASSIGN = "assign"  # a new desired revision
    BLOCK = "block"  # GPU pods hold the node, no approval to evict them (or eviction refused)
    UNBLOCK = "unblock"  # the node is empty of GPU work
    START = "start"  # the agent reports applying
    SUCCEED = "succeed"  # the agent acked the desired hash
    FAIL = "fail"  # the agent (or verification) reported failure
    RETRY = "retry"  # backoff elapsed, deliver again
    HASH_MISMATCH = "hash_mismatch"  # a heartbeat's applied hash differs from the desired one
    HASH_MATCH = "hash_match"  # a heartbeat's applied hash is the desired one
    SILENCE = "silence"  # heartbeats stopped
    RETURN = "return"  # a heartbeat from an offline node


S = NodeState
_ANY = frozenset(NodeState)

# (event) -> (states it may happen in, the state it leads to)
_TABLE: dict[Event, tuple[frozenset[NodeState], NodeState]] = {
    Event.ASSIGN: (_ANY, S.PENDING),
    Event.BLOCK: (frozenset({S.PENDING, S.BLOCKED}), S.BLOCKED),
    Event.UNBLOCK: (frozenset({S.BLOCKED}), S.PENDING),
    Event.START: (frozenset({S.PENDING, S.APPLYING}), S.APPLYING),
    Event.SUCCEED: (frozenset({S.PENDING, S.APPLYING, S.FAILED, S.DRIFT, S.APPLIED}), S.APPLIED),
    Event.FAIL: (frozenset({S.PENDING, S.APPLYING, S.APPLIED, S.FAILED}), S.FAILED),
    Event.RETRY: (frozenset({S.FAILED, S.DRIFT}), S.PENDING),
    Event.HASH_MISMATCH: (frozenset({S.APPLIED, S.DRIFT}), S.DRIFT),
    Event.HASH_MATCH: (frozenset({S.DRIFT, S.APPLIED}), S.APPLIED),
    Event.SILENCE: (_ANY - {S.OFFLINE}, S.OFFLINE),
    # Back from silence the node is re-evaluated: applied if its hash is the desired one, else pending.
    Event.RETURN: (frozenset({S.OFFLINE}), S.PENDING),
}

# States a bundle is handed out in: the agent is told what to apply only when the server wants it to.
DELIVERABLE = frozenset({S.PENDING, S.APPLYING})
# States that keep a node out of service for the rollout's maximum-unavailable count.
UNAVAILABLE = frozenset({S.PENDING, S.APPLYING, S.FAILED, S.BLOCKED, S.OFFLINE, S.DRIFT})


class IllegalTransition(ValueError):
    def __init__(self, state: NodeState, event: Event) -> None:
        super().__init__(f"a node in state {state} cannot take event {event}")
        self.state = state
        self.event = event


def transition(state: NodeState | str, event: Event) -> NodeState:
    """The state ``event`` leads to from ``state``; IllegalTransition when it may not happen there."""
    current = NodeState(state)
    allowed, target = _TABLE[event]
    if current not in allowed:
        raise IllegalTransition(current, event)
    return target


def can(state: NodeState | str, event: Event) -> bool:
    return NodeState(state) in _TABLE[event][0]


def retry_delay(attempts: int, *, base_seconds: float, cap_seconds: float) -> timedelta:
    """Exponential backoff after the ``attempts``-th failure: base, 2 base, 4 base... capped."""
    if attempts < 1:
        return timedelta(0)
    return timedelta(seconds=backoff_seconds(attempts - 1, base=base_seconds, cap=cap_seconds))
