"""A capacity request's life, in one place: its states, the events that move it, which moves are legal,
who may cause each, and the one function that writes a move (the row's state and its transition row,
together).

    (new) --submit--> pending --admit--> admitted --materialise--> active
    pending --approve--> pending        (the approval is recorded; admission decides next)
    pending --reject | cancel--> rejected | cancelled
    admitted, active --release | expire | preempt--> released | expired | preempted

Callers decide whether a move happens (the engine, a service's permission check); this module decides
whether it may, refuses an illegal one before writing anything, and writes every move of a batch in
one pipeline (the runner moves dozens of requests per cohort pass).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from gpuplatform.accounts.models import User
from gpuplatform.db.bulk_update import insert_each, insert_with_keys, update_each
from gpuplatform.errors import Conflict, Forbidden
from quotas.models import CapacityRequest, RequestState, RequestTransition
from quotas.models.requests import FINAL, HOLDING, ApprovalState

NEW = ""  # the state of a request not yet stored: a transition row's empty from_state


class Event(enum.StrEnum):
    SUBMIT = "submit"
    ADMIT = "admit"
    MATERIALISE = "materialise"
    APPROVE = "approve"
    REJECT = "reject"
    CANCEL = "cancel"
    RELEASE = "release"
    EXPIRE = "expire"
    PREEMPT = "preempt"
    WITHDRAW = "withdraw"  # the tenant (or one above it) was suspended: pending requests stop waiting


class ActorKind(enum.StrEnum):
    REQUESTER = "requester"  # the user who made the request
    APPROVER = "approver"  # a tenant-admin of the request's tenant or above
    PLATFORM = "platform"  # a platform-admin
    SYSTEM = "system"  # the admission runner, the loop, materialisation


PEOPLE = frozenset({ActorKind.REQUESTER, ActorKind.APPROVER, ActorKind.PLATFORM})
MANAGERS = frozenset({ActorKind.APPROVER, ActorKind.PLATFORM})
SYSTEM = frozenset({ActorKind.SYSTEM})


@dataclass(frozen=True)
class Rule:
    sources: frozenset[str]
    target: RequestState
    allowed: frozenset[ActorKind]
    guard: Callable[[CapacityRequest], bool] | None = None  # a further condition on the row
    guard_text: str = ""


def _awaiting(row: CapacityRequest) -> bool:
    return row.approval == ApprovalState.AWAITING


RULES: Mapping[Event, Rule] = {
    Event.SUBMIT: Rule(frozenset({NEW}), RequestState.PENDING, frozenset({ActorKind.REQUESTER})),
    Event.ADMIT: Rule(frozenset({RequestState.PENDING}), RequestState.ADMITTED, SYSTEM),
    Event.MATERIALISE: Rule(frozenset({RequestState.ADMITTED}), RequestState.ACTIVE, SYSTEM),
    Event.APPROVE: Rule(
        frozenset({RequestState.PENDING}), RequestState.PENDING, MANAGERS, _awaiting, "awaiting approval"
    ),
    Event.REJECT: Rule(
        frozenset({RequestState.PENDING}), RequestState.REJECTED, MANAGERS, _awaiting, "awaiting approval"
    ),
    Event.CANCEL: Rule(frozenset({RequestState.PENDING}), RequestState.CANCELLED, PEOPLE),
    Event.RELEASE: Rule(frozenset(HOLDING), RequestState.RELEASED, PEOPLE),
    Event.EXPIRE: Rule(frozenset(HOLDING), RequestState.EXPIRED, SYSTEM),
    Event.PREEMPT: Rule(frozenset(HOLDING), RequestState.PREEMPTED, SYSTEM),
    Event.WITHDRAW: Rule(frozenset({RequestState.PENDING}), RequestState.CANCELLED, SYSTEM),
}


class IllegalTransition(Conflict):
    """The request is not in a state (or approval state) this event applies to."""

    code = "invalid_state"


class ActorNotAllowed(Forbidden):
    """This kind of actor may not cause this event."""

    code = "actor_not_allowed"


def target_of(state: str, event: Event) -> RequestState | None:
    """Where ``event`` takes a request in ``state``, or None when it does not apply there."""
    rule = RULES[event]
    return rule.target if state in rule.sources else None


@dataclass
class Move:
    """One event on one request. ``reason_code`` and ``message`` are the transition row's and, when
    ``explains``, the request's own too (a move that is recorded but does not explain the request,
    such as an approval or materialisation, leaves its explanation as it was). ``changes`` are the
    other fields written with the state (admission time, loans, the preemptor...), applied last."""

    request: CapacityRequest
    event: Event
    by: ActorKind
    reason_code: str
    message: str
    actor: User | None = None
    explains: bool = True
    changes: dict[str, Any] = field(default_factory=dict)


def move_requests(*, moves: Sequence[Move], now: datetime, claim: bool = False) -> list[RequestTransition]:
    """Check every move, then write each request's new state and fields and its transition row.

    Illegal moves (wrong state, failed guard, wrong kind of actor) raise before anything is written.
    Without ``claim`` the caller holds the rows (a row lock or the admission locks) and passes them
    read whole; moves of one batch are written in one pipeline, unsaved requests (submitted in this
    batch) inserted. With ``claim`` each move is a conditional UPDATE on the state it was read in: a
    request someone else moved first is skipped (healthchecks' claim-by-update) and gets no row.
    Returns the transition rows written."""
    planned = _plan(moves)
    if claim:
        return _claim(planned, now)
    transitions: list[RequestTransition] = []
    fields: set[str] = set()
    rows: dict[uuid.UUID, CapacityRequest] = {}
    for move, before, after in planned:
        fields.update(_apply(move.request, move, after, now))
        rows[move.request.pk] = move.request
        transitions.append(_transition(move, before, after, now))
    saved = [row for row in rows.values() if not row._state.adding]
    insert_with_keys(CapacityRequest, [row for row in rows.values() if row._state.adding])
    update_each(CapacityRequest, saved, sorted(fields))
    insert_each(RequestTransition, transitions)
    return transitions


def _plan(moves: Sequence[Move]) -> list[tuple[Move, str, RequestState]]:
    """Each move with its from and to state, moves of one request chained in order; raises on the
    first illegal one, so a refused batch writes nothing."""
    current: dict[uuid.UUID, str] = {}
    planned = []
    for move in moves:
        row = move.request
        before = current.get(row.pk, NEW if row._state.adding else row.state)
        rule = RULES[move.event]
        if before not in rule.sources:
            sources = ", ".join(sorted(s or "new" for s in rule.sources))
            raise IllegalTransition(
                f"The request is {before or 'new'}; {move.event} applies only to {sources}."
            )
        if rule.guard is not None and not rule.guard(row):
            raise IllegalTransition(f"The request is not {rule.guard_text}.")
        if move.by not in rule.allowed:
            raise ActorNotAllowed(f"A {move.by} may not {move.event} a request.")
        current[row.pk] = rule.target
        planned.append((move, before, rule.target))
    return planned


def _apply(row: CapacityRequest, move: Move, after: RequestState, now: datetime) -> list[str]:
    """Set the new state and what goes with it on the row; returns the fields set."""
    values: dict[str, Any] = {"state": after}
    if move.explains:
        values.update(reason_code=move.reason_code, message=move.message)
    if after != RequestState.PENDING:
        values["queue_position"] = values["cohort_position"] = None  # positions are for waiting
    if after in FINAL:
        values["ended_at"] = now
    values.update(move.changes)
    values["updated_at"] = now
    for name, value in values.items():
        setattr(row, name, value)
    return list(values)


def _claim(planned: list[tuple[Move, str, RequestState]], now: datetime) -> list[RequestTransition]:
    transitions = []
    for move, before, after in planned:
        row = move.request
        values = {
            name: getattr(row, name) for name in _apply(row, move, after, now) if name not in ("state",)
        }
        if not CapacityRequest.objects.filter(pk=row.pk, state=before).update(state=after, **values):
            row.state = before  # someone else moved it first
            continue
        transitions.append(_transition(move, before, after, now))
    RequestTransition.objects.bulk_create(transitions)
    return transitions


def _transition(move: Move, before: str, after: RequestState, now: datetime) -> RequestTransition:
    return RequestTransition(
        request_id=move.request.pk,
        from_state=before,
        to_state=after,
        reason_code=move.reason_code,
        message=move.message,
        actor=move.actor,
        at=now,
    )
