"""The authoritative admission: snapshot the cohort, decide with the pure engine, persist, in the
caller's transaction under the locks of `quotas.runner.locks`."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal
from typing import Any

from gpuplatform.bulk_update import update_each
from quotas import admission as engine
from quotas.models import CapacityRequest, Flavor, RequestTransition
from quotas.models.requests import RequestState
from quotas.runner.inputs import Explained, Names, build_snapshot, ge_of, micros, physical_free
from quotas.runner.locks import lock_flavors

MAX_PASSES = 3  # a pass that preempts may let more in on the next; three is plenty in practice


@dataclass
class AdmissionRun:
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
) -> tuple[AdmissionRun, Names]:
    """Run the engine over the cohort: `schedule` passes until no preemption frees more. The caller
    holds the cohort lock; this takes the flavor locks last and returns holding them, so the caller's
    writes follow at once. ``check`` may refuse (raise) on the first snapshot, before any flavor lock."""
    key = tuple(sorted(str(f.pk) for f in flavors))
    guess = _last_free.get(key)
    snapshot, names = build_snapshot(
        root_path=root_path,
        flavors=flavors,
        now=now,
        free=guess if guess is not None else physical_free(flavors),
        extra=extra or [],
    )
    if check is not None:
        check(snapshot)
    outcome = _decide(snapshot, only)
    lock_flavors(flavor_ids=[f.pk for f in flavors])
    exact = physical_free(flavors)
    if exact != snapshot.free:  # another cohort took or freed capacity meanwhile: decide again
        outcome = _decide(replace(snapshot, free=exact), only)
    if len(_last_free) > 1_000:
        _last_free.clear()
    _last_free[key] = _free_after(exact, outcome, snapshot)
    return outcome, names


def _free_after(
    free: dict[str, dict[str, int]], outcome: AdmissionRun, snapshot: engine.Snapshot
) -> dict[str, dict[str, int]]:
    """Free capacity once this outcome is written (what it admits taken; what it preempts left out,
    so the guess errs towards deciding again rather than towards admitting)."""
    after = {flavor: dict(per_resource) for flavor, per_resource in free.items()}
    pending = snapshot.index.pending
    for rid, decision in outcome.decisions.items():
        req = pending.get(rid)
        if decision.admitted and req is not None and req.flavor in after:
            for resource, amount in req.amounts.items():
                after[req.flavor][resource] = after[req.flavor].get(resource, 0) - amount
    return after


# The free capacity each flavor set last had in this process. Only a first guess to decide on before
# the flavor lock: the decision is always checked against capacity read under it.
_last_free: dict[tuple[str, ...], dict[str, dict[str, int]]] = {}


def _decide(snapshot: engine.Snapshot, only: str | None) -> AdmissionRun:
    outcome = AdmissionRun()
    if only is not None:
        # The fast path for a new arrival: decide it alone. It cannot make room for anyone else
        # (it only takes capacity), so the other pending requests' decisions stand as they are;
        # the loop refreshes their positions.
        decision = engine.decide(snapshot=snapshot, request_id=only)
        outcome.decisions[decision.request_id] = decision
        return outcome
    for _ in range(MAX_PASSES):
        result = engine.schedule(snapshot=snapshot)
        for decision in result:
            outcome.decisions[decision.request_id] = decision
        if not any(d.victims for d in result if d.admitted):
            break
        snapshot = engine.advance(snapshot=snapshot, decisions=result)
    return outcome


def persist(*, outcome: AdmissionRun, names: Names, now: datetime) -> list[RequestTransition]:
    """Write what the engine decided: admissions, preemptions, and why the rest still wait. The
    snapshot's unsaved requests are inserted here, already in their decided state. Returns the
    transitions written."""
    decisions = outcome.decisions
    victims = {v.request_id: (d, v) for d in decisions.values() if d.admitted for v in d.victims}
    # Rows that change state are read whole (they are few); waiting rows were read by the snapshot.
    moving = [rid for rid, d in decisions.items() if d.admitted] + list(victims)
    saved = [uuid.UUID(rid) for rid in moving if rid not in names.unsaved]
    full: dict[str, CapacityRequest] = dict(names.unsaved)
    if saved:
        full.update((str(r.pk), r) for r in CapacityRequest.objects.filter(pk__in=saved))
    transitions = [
        RequestTransition(
            request_id=row.pk,
            to_state=RequestState.PENDING,
            reason_code="submitted",
            message=row.reason,
            actor=row.created_by,
            at=now,
        )
        for row in names.unsaved.values()
    ]
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
            reason = str(decision.reason or "")
            now_explained = Explained(
                reason, decision.message, decision.queue_position, decision.cohort_position
            )
            if rid in names.unsaved:
                row = names.unsaved[rid]
                row.reason_code, row.message = reason, decision.message
                row.queue_position, row.cohort_position = decision.queue_position, decision.cohort_position
            elif names.explained[rid] != now_explained:  # most waits are unchanged: leave those rows
                explained.append(
                    CapacityRequest(
                        pk=uuid.UUID(rid),
                        reason_code=reason,
                        message=decision.message,
                        queue_position=decision.queue_position,
                        cohort_position=decision.cohort_position,
                        updated_at=now,
                    )
                )
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
    for row in names.unsaved.values():
        row.save(force_insert=True)
    if explained:
        update_each(
            CapacityRequest,
            explained,
            ["reason_code", "message", "queue_position", "cohort_position", "updated_at"],
        )
    moved = [row for row in moved if str(row.pk) not in names.unsaved]
    if moved:
        update_each(
            CapacityRequest,
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
    return transitions


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
