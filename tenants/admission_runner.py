"""The authoritative admission: lock, snapshot, decide with the pure engine, persist, in one transaction.

Locks are PostgreSQL transaction-scoped advisory locks, always in one global order: every flavor
involved (sorted), then the cohort root. Physical capacity is per flavor and shared by all cohorts,
quota and tenant-wide budgets are per cohort; holding both while deciding means two transactions can
never both spend the same unit, and the fixed order means they cannot deadlock.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import connection, transaction

from tenants import admission as engine
from tenants.admission_snapshot import Names, build_snapshot, ge_of, micros
from tenants.models import CapacityRequest, Flavor, RequestTransition
from tenants.models.requests import RequestState

FLAVOR_LOCK_SPACE = 50_501
COHORT_LOCK_SPACE = 50_502
MAX_PASSES = 3  # a pass that preempts may let more in on the next; three is plenty in practice


def _lock_key(value: uuid.UUID) -> int:
    return int.from_bytes(value.bytes[:4], "big", signed=True)


def lock_admission(*, flavor_ids: Iterable[uuid.UUID], root_ids: Iterable[uuid.UUID]) -> None:
    """Take the advisory locks for deciding on these flavors and cohorts, in the global order.
    Must run inside a transaction (released at its end)."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("lock_admission must run inside a transaction")
    keys = [(FLAVOR_LOCK_SPACE, k) for k in sorted({_lock_key(f) for f in flavor_ids})]
    keys += [(COHORT_LOCK_SPACE, k) for k in sorted({_lock_key(r) for r in root_ids})]
    if connection.vendor != "postgresql":
        return  # SQLite (the demo) serialises writers on its own
    with connection.cursor() as cursor:
        for space, key in keys:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [space, key])


@dataclass
class Outcome:
    """What one admission run did, for callers and for queueing materialisation after commit."""

    decisions: dict[str, engine.Decision] = field(default_factory=dict)
    admitted: list[uuid.UUID] = field(default_factory=list)
    preempted: list[uuid.UUID] = field(default_factory=list)


def _loans(decision: engine.Decision) -> list[dict[str, Any]]:
    return [
        {"lender": loan.lender, "resource": loan.resource, "amount": loan.amount, "ge": str(loan.ge)}
        for loan in decision.borrowed
    ]


def decide_cohort(
    *,
    root_path: str,
    flavors: list[Flavor],
    now: datetime,
    extra: list[CapacityRequest] | None = None,
    check: Callable[[engine.Snapshot], None] | None = None,
    only: str | None = None,
) -> tuple[Outcome, Names]:
    """Run the engine over the cohort: `schedule` passes until no preemption frees more. Pure apart
    from reading; the caller holds the locks. ``check`` may refuse (raise) on the first snapshot."""
    snapshot, names = build_snapshot(root_path=root_path, flavors=flavors, now=now, extra=extra or [])
    if check is not None:
        check(snapshot)
    outcome = Outcome()
    if only is not None:
        # The fast path for a new arrival: decide it alone. It cannot make room for anyone else
        # (it only takes capacity), so the other pending requests' decisions stand as they are;
        # the loop refreshes their positions.
        decision = engine.decide(snapshot=snapshot, request_id=only)
        outcome.decisions[decision.request_id] = decision
        return outcome, names
    for _ in range(MAX_PASSES):
        result = engine.schedule(snapshot=snapshot)
        for decision in result:
            outcome.decisions[decision.request_id] = decision
        if not any(d.victims for d in result if d.admitted):
            break
        snapshot = engine.advance(snapshot=snapshot, decisions=result)
    return outcome, names


def persist(*, outcome: Outcome, names: Names, now: datetime) -> None:
    """Write what the engine decided: admissions, preemptions, and why the rest still wait."""
    decisions = outcome.decisions
    # The snapshot already read every pending and holding row of the cohort: no second read.
    # Waiting rows were read (partially) by the snapshot; rows that change state are read whole.
    rows = names.rows
    victims = {v.request_id: (d, v) for d in decisions.values() if d.admitted for v in d.victims}
    moving = [rid for rid, d in decisions.items() if d.admitted] + list(victims)
    full = {str(r.pk): r for r in CapacityRequest.objects.filter(pk__in=[uuid.UUID(rid) for rid in moving])}
    transitions: list[RequestTransition] = []
    explained: list[CapacityRequest] = []
    moved: list[CapacityRequest] = []
    order = micros(now)
    for rid, decision in decisions.items():
        if decision.admitted and rid not in victims:
            row = full[rid]
            order += 1
            row.state = RequestState.ADMITTED
            row.reason_code = str(decision.outcome)
            row.message = decision.message
            row.admitted_at, row.admitted_order = now, order
            row.expires_at = None if row.duration is None else now + row.duration
            row.borrowed = _loans(decision)
            row.warnings = [{"code": w.code, "message": w.message} for w in decision.warnings]
            row.queue_position = row.cohort_position = None
            row.updated_at = now
            transitions.append(
                _transition(row, RequestState.PENDING, str(decision.outcome), decision.message, now)
            )
            outcome.admitted.append(row.pk)
            moved.append(row)
        elif not decision.admitted:
            row = rows[rid]
            reason = str(decision.reason or "")
            fresh = (row.reason_code, row.message, row.queue_position, row.cohort_position) != (
                reason,
                decision.message,
                decision.queue_position,
                decision.cohort_position,
            )
            if fresh:  # only rewrite rows whose explanation changed: most waits are unchanged
                row.reason_code, row.message = reason, decision.message
                row.queue_position, row.cohort_position = decision.queue_position, decision.cohort_position
                row.updated_at = now
                explained.append(row)
    for rid, (by, victim) in victims.items():
        row = full[rid]
        previous = row.state
        message = (
            f"Preempted by request {by.request_id} of {by.tenant!r} "
            + ("to reclaim its nominal quota" if victim.cause == "reclaim" else "of higher priority")
            + "; the cluster objects of this request are lowered or removed."
        )
        row.state, row.reason_code, row.message = RequestState.PREEMPTED, "preempted", message
        row.ended_at = now
        row.preempted_by_id = uuid.UUID(by.request_id)
        row.updated_at = now
        transitions.append(_transition(row, previous, "preempted", message, now))
        outcome.preempted.append(row.pk)
        moved.append(row)
    if explained:
        CapacityRequest.objects.bulk_update(
            explained, ["reason_code", "message", "queue_position", "cohort_position", "updated_at"]
        )
    if moved:
        CapacityRequest.objects.bulk_update(
            moved,
            [
                "state",
                "reason_code",
                "message",
                "admitted_at",
                "admitted_order",
                "expires_at",
                "borrowed",
                "warnings",
                "queue_position",
                "cohort_position",
                "ended_at",
                "preempted_by",
                "updated_at",
            ],
        )
    RequestTransition.objects.bulk_create(transitions)


def _transition(
    row: CapacityRequest, before: str, code: str, message: str, now: datetime
) -> RequestTransition:
    return RequestTransition(
        request_id=row.pk, from_state=before, to_state=row.state, reason_code=code, message=message, at=now
    )


def request_ge(flavor: Flavor, amounts: dict[str, int]) -> Decimal:
    """The request's GE for display and burn (the engine keeps the exact fraction)."""
    ge = ge_of(flavor, amounts)
    return Decimal(ge.numerator) / Decimal(ge.denominator)
