"""The authoritative admission: snapshot the cohort, decide with the pure engine, persist, in the
caller's transaction under the locks of `quotas.runner.locks`."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal
from typing import Any

from gpuplatform.db.bulk_update import update_each
from quotas import admission as engine
from quotas.lifecycle import ActorKind, Event, Move, move_requests
from quotas.models import CapacityRequest, Flavor, RequestTransition
from quotas.runner.cohort_reads import CohortReads
from quotas.runner.inputs import (
    Explained,
    SnapshotRows,
    build_snapshot,
    ge_of,
    micros,
    physical_free,
    pool_capacity,
)

# What `quotas.lifecycle` and `_admission` read of a request that moves (the rest is only written).
MOVING_FIELDS = ("id", "state", "approval", "flavor_id", "fallback_flavors", "amounts", "duration_seconds")
MAX_PASSES = 3  # a pass that preempts may let more in on the next; three is plenty in practice


@dataclass
class AdmissionRun:
    """What the engine decided in one admission run, by request id; `persist` writes it."""

    decisions: dict[str, engine.Decision] = field(default_factory=dict)


def _loans(decision: engine.Decision) -> list[dict[str, Any]]:
    return [
        {"lender": loan.lender, "resource": loan.resource, "amount": loan.amount, "ge": str(loan.ge)}
        for loan in decision.borrowed
    ]


def _attempts(decision: engine.Decision) -> list[dict[str, Any]]:
    return [
        {"flavor": a.flavor, "outcome": a.outcome, "reason": str(a.reason or ""), "message": a.message}
        for a in decision.flavor_attempts
    ]


def decide_cohort(
    *,
    root_path: str,
    flavors: list[Flavor],
    now: datetime,
    extra: list[CapacityRequest] | None = None,
    check: Callable[[engine.Snapshot], None] | None = None,
    arrival_id: str | None = None,
    reads: CohortReads | None = None,
) -> tuple[AdmissionRun, SnapshotRows]:
    """Run the engine over the cohort: `schedule` passes until no preemption frees more. The caller
    holds the cohort lock; this takes the flavor locks last and returns holding them, so the caller's
    writes follow at once. ``check`` may refuse (raise) on the first snapshot, before any flavor lock;
    ``arrival_id`` names a new arrival (in ``extra``) to decide alone; ``reads``: what the caller read
    with the cohort lock (`lock_cohort_reading`), when it took it so."""
    reads = reads or CohortReads()
    key = tuple(sorted(str(f.pk) for f in flavors))
    guess = _last_free.get(key)
    # Inventory changes pool capacity without the flavor locks: read before them, once.
    capacity = pool_capacity(flavors, stamp=reads.capacity_stamp)
    snapshot, snapshot_rows = build_snapshot(
        root_path=root_path,
        flavors=flavors,
        now=now,
        free=guess if guess is not None else physical_free(flavors, capacity=capacity),
        extra=extra or [],
        catalogue_stamp=reads.catalogue_stamp,
        live=reads.live,
    )
    if check is not None:
        check(snapshot)
    outcome = _decide(snapshot, arrival_id)
    exact = physical_free(flavors, capacity=capacity, lock=True)  # the locks and the holds: one round trip
    if exact != snapshot.free:  # another cohort took or freed capacity meanwhile: decide again
        outcome = _decide(replace(snapshot, free=exact), arrival_id)
    if len(_last_free) > 1_000:
        _last_free.clear()
    _last_free[key] = _free_after(exact, outcome, snapshot)
    return outcome, snapshot_rows


def _free_after(
    free: dict[str, dict[str, int]], outcome: AdmissionRun, snapshot: engine.Snapshot
) -> dict[str, dict[str, int]]:
    """Free capacity once this outcome is written (what it admits taken; what it preempts left out,
    so the guess errs towards deciding again rather than towards admitting)."""
    after = {flavor: dict(per_resource) for flavor, per_resource in free.items()}
    pending = snapshot.index.pending
    for rid, decision in outcome.decisions.items():
        req = pending.get(rid)
        if decision.admitted and req is not None and decision.flavor in after:
            for resource, amount in req.amounts.items():
                after[decision.flavor][resource] = after[decision.flavor].get(resource, 0) - amount
    return after


# The free capacity each flavor set last had in this process. Only a first guess to decide on before
# the flavor lock: the decision is always checked against capacity read under it.
_last_free: dict[tuple[str, ...], dict[str, dict[str, int]]] = {}


def _decide(snapshot: engine.Snapshot, arrival_id: str | None) -> AdmissionRun:
    outcome = AdmissionRun()
    if arrival_id is not None:
        # The fast path for a new arrival: decide it alone. It cannot make room for anyone else
        # (it only takes capacity), so the other pending requests' decisions stand as they are;
        # the loop refreshes their positions.
        decision = engine.decide(snapshot=snapshot, request_id=arrival_id)
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


@dataclass(frozen=True)
class Persisted:
    """What `persist` wrote: the transitions, and the requests whose cluster objects must follow after
    commit (admitted ones raised, preempted ones lowered or removed)."""

    transitions: list[RequestTransition]
    admitted: list[uuid.UUID]
    preempted: list[uuid.UUID]


def persist(*, outcome: AdmissionRun, snapshot_rows: SnapshotRows, now: datetime) -> Persisted:
    """Write what the engine decided: admissions, preemptions, and why the rest still wait. The
    snapshot's unsaved requests are inserted here, submitted and already in their decided state, all
    through `quotas.lifecycle`."""
    decisions = outcome.decisions
    victims = {v.request_id: (d, v) for d in decisions.values() if d.admitted for v in d.victims}
    rows = _rows_moving(decisions, victims, snapshot_rows)
    submissions = [_submission(row, decisions.get(rid)) for rid, row in snapshot_rows.unsaved.items()]
    to_admit = [(rid, d) for rid, d in decisions.items() if d.admitted and rid not in victims]
    admissions = [
        # admitted_order: after every earlier admission, in the order the engine decided them
        _admission(rows[rid], decision, snapshot_rows, now=now, order=micros(now) + n)
        for n, (rid, decision) in enumerate(to_admit, start=1)
    ]
    preemptions = [_preemption(rows[rid], by, victim) for rid, (by, victim) in victims.items()]
    _explain_waits(decisions, snapshot_rows, now)
    transitions = move_requests(moves=[*submissions, *admissions, *preemptions], now=now)
    return Persisted(
        transitions=transitions,
        admitted=[move.request.pk for move in admissions],
        preempted=[move.request.pk for move in preemptions],
    )


def _rows_moving(
    decisions: dict[str, engine.Decision],
    victims: dict[str, tuple[engine.Decision, engine.Victim]],
    snapshot_rows: SnapshotRows,
) -> dict[str, CapacityRequest]:
    """The requests that change state, by id: the stored ones read with only what deciding their move
    reads (their loans, warnings and cluster objects would cost more to decode than the move to
    write), the unsaved ones as they are."""
    moving = [rid for rid, d in decisions.items() if d.admitted] + list(victims)
    saved = [uuid.UUID(rid) for rid in moving if rid not in snapshot_rows.unsaved]
    rows: dict[str, CapacityRequest] = dict(snapshot_rows.unsaved)
    if saved:
        read = CapacityRequest.objects.filter(pk__in=saved).only(*MOVING_FIELDS)
        rows.update((str(r.pk), r) for r in read)
    return rows


def _submission(row: CapacityRequest, decision: engine.Decision | None) -> Move:
    """An unsaved request, inserted pending; one that waits is explained by its decision at once."""
    return Move(
        request=row,
        event=Event.SUBMIT,
        by=ActorKind.REQUESTER,
        actor=row.created_by,
        reason_code="submitted",
        message=row.reason,
        changes=_wait_fields(decision) if decision is not None and not decision.admitted else {},
    )


def _wait_fields(decision: engine.Decision) -> dict[str, Any]:
    """How a waiting request explains itself: why, where it stands, each flavor's answer."""
    return {
        "reason_code": str(decision.reason or ""),
        "message": decision.message,
        "queue_position": decision.queue_position,
        "cohort_position": decision.cohort_position,
        "flavor_attempts": _attempts(decision),
    }


def _admission(
    row: CapacityRequest, decision: engine.Decision, snapshot_rows: SnapshotRows, *, now: datetime, order: int
) -> Move:
    """Admit the request on the flavor the engine chose, ``order``-th among this run's admissions."""
    changes: dict[str, Any] = {"flavor_attempts": _attempts(decision)}
    chosen = snapshot_rows.flavors[decision.flavor]
    if chosen.pk != row.flavor_id:
        # Admitted on a flavor it falls back to: that flavor is the one it holds (the hold
        # trigger moves the count with it), the first choice joins the fallbacks it skipped.
        first = str(row.flavor_id)
        changes["fallback_flavors"] = [first, *(i for i in row.fallback_flavors if i != str(chosen.pk))]
        changes["flavor_id"] = chosen.pk
        changes["ge"] = request_ge(chosen, {r: int(a) for r, a in row.amounts.items()})
    return Move(
        request=row,
        event=Event.ADMIT,
        by=ActorKind.SYSTEM,
        reason_code=str(decision.outcome),
        message=decision.message,
        changes={
            **changes,
            "admitted_at": now,
            "admitted_order": order,
            "expires_at": None if row.duration is None else now + row.duration,
            "borrowed": _loans(decision),
            "warnings": [{"code": w.code, "message": w.message} for w in decision.warnings],
        },
    )


def _preemption(row: CapacityRequest, by: engine.Decision, victim: engine.Victim) -> Move:
    """Preempt the victim, saying by whom only within the same tenant (the victim's tenant may not
    see the preemptor's)."""
    same_tenant = victim.tenant == by.tenant
    preemptor = f"request {by.request_id} of {by.tenant!r}" if same_tenant else "a request of another tenant"
    why = {
        "reclaim": "reclaiming its nominal quota",
        "reclaim_while_borrowing": "of higher priority borrowing within the cohort",
    }.get(victim.cause, "of higher priority")
    message = f"Preempted by {preemptor} {why}; the cluster objects of this request are lowered or removed."
    return Move(
        request=row,
        event=Event.PREEMPT,
        by=ActorKind.SYSTEM,
        reason_code="preempted",
        message=message,
        changes={"preempted_by_id": uuid.UUID(by.request_id)},
    )


def _explain_waits(decisions: dict[str, engine.Decision], snapshot_rows: SnapshotRows, now: datetime) -> None:
    """Stored requests that still wait, explained anew where their explanation changed (most waits
    are unchanged: those rows are left as they are)."""
    explained: list[CapacityRequest] = []
    for rid, decision in decisions.items():
        if decision.admitted or rid in snapshot_rows.unsaved:
            continue
        fields = _wait_fields(decision)
        now_explained = Explained(
            fields["reason_code"], decision.message, decision.queue_position, decision.cohort_position
        )
        if snapshot_rows.explained[rid] != now_explained:
            explained.append(CapacityRequest(pk=uuid.UUID(rid), **fields, updated_at=now))
    if explained:
        update_each(
            CapacityRequest,
            explained,
            ["reason_code", "message", "queue_position", "cohort_position", "flavor_attempts", "updated_at"],
        )


def request_ge(flavor: Flavor, amounts: dict[str, int]) -> Decimal:
    """The request's GE for display and burn (the engine keeps the exact fraction)."""
    ge = ge_of(flavor, amounts)
    return Decimal(ge.numerator) / Decimal(ge.denominator)
