"""What a platform-admin does to a rollout once started: pause, resume, abort, roll back.

Each locks the rollout row, then the pool's node rows in name order (the driver's order, see
policies/services/rollouts.py), so a control and a driver pass or an agent report never interleave;
cluster calls (an uncordon on abort, the bundles a roll back publishes) happen after commit. The UI
and the API call these same functions; both answer a refusal with the DomainError raised here.
"""

from __future__ import annotations

import uuid

from django.db import transaction
from django.utils import timezone

from gpuplatform.accounts.models import User
from gpuplatform.audit.services import record_event
from gpuplatform.errors import Conflict, Forbidden, NotFound
from policies import draining, push
from policies.models import ACTIVE_STATES, NodePolicyState, PolicyRevision, Rollout, RolloutState
from policies.node_states import Event, NodeState, can
from policies.services.delivery import move
from policies.services.rollouts import _act, _lock_pool_rows, _Pass, begin_rollback, queue_advance

__all__ = ["abort_rollout", "pause_rollout", "resume_rollout", "roll_back_rollout"]


def _locked(actor: User, rollout_id: uuid.UUID | str, verb: str) -> Rollout:
    if not actor.is_platform_admin:
        raise Forbidden(f"Only platform-admins {verb} rollouts.")
    rollout = (
        Rollout.objects.select_for_update(of=("self",), no_key=True)
        .select_related("pool", "pool__cluster", "revision", "from_revision")
        .filter(pk=rollout_id)
        .first()
    )
    if rollout is None:
        raise NotFound("No such rollout.", code="rollout_not_found")
    return rollout


def _refuse(rollout: Rollout, verb: str, code: str) -> Conflict:
    return Conflict(f"This rollout is {rollout.get_state_display()}: it cannot be {verb}.", code=code)


def pause_rollout(*, actor: User, rollout_id: uuid.UUID | str) -> Rollout:
    """Hold a running rollout: no further node is started; nodes already given the revision finish
    applying it. Locks the rollout row. Audited."""
    with transaction.atomic():
        rollout = _locked(actor, rollout_id, "pause")
        if rollout.state != RolloutState.RUNNING:
            raise _refuse(rollout, "paused", "rollout.not_running")
        rollout.state = RolloutState.PAUSED
        rollout.save(update_fields=["state"])
        record_event(actor=actor, action="rollout.paused", obj=rollout, before={"state": "running"})
    return rollout


def resume_rollout(*, actor: User, rollout_id: uuid.UUID | str) -> Rollout:
    """Let a paused rollout go on where it stopped; the driver runs after commit. Audited."""
    with transaction.atomic():
        rollout = _locked(actor, rollout_id, "resume")
        if rollout.state != RolloutState.PAUSED:
            raise _refuse(rollout, "resumed", "rollout.not_paused")
        rollout.state = RolloutState.RUNNING
        rollout.save(update_fields=["state"])
        record_event(actor=actor, action="rollout.resumed", obj=rollout, before={"state": "paused"})
        queue_advance(rollout.pk)
    return rollout


def abort_rollout(*, actor: User, rollout_id: uuid.UUID | str) -> Rollout:
    """Stop a running or paused rollout for good. Nodes that applied its revision keep it; the others
    stay on what they run (their desired revision goes back to it, so no bundle is handed out), and a
    node the rollout cordoned is uncordoned after commit. Locks the rollout and the pool's node rows.
    Audited."""
    uncordon: list[NodePolicyState] = []
    with transaction.atomic():
        rollout = _locked(actor, rollout_id, "abort")
        if rollout.state not in ACTIVE_STATES:
            raise _refuse(rollout, "aborted", "rollout.finished")
        rows = [r for r in _lock_pool_rows(rollout.pool) if r.rollout_id == rollout.pk]
        numbers = {r.applied_revision for r in rows if r.applied_revision}
        by_number = {
            rev.number: rev for rev in PolicyRevision.objects.filter(pool=rollout.pool, number__in=numbers)
        }
        kept, stopped = 0, 0
        for row in rows:
            if row.state == NodeState.APPLIED and row.desired_revision_id == rollout.revision_id:
                kept += 1
                continue
            stopped += 1
            if row.state == NodeState.BLOCKED:
                move(row, Event.UNBLOCK, reason=f"rollout {rollout.pk} aborted")
            back_to = by_number.get(row.applied_revision or 0)
            if back_to is not None and can(row.state, Event.SUCCEED):
                move(
                    row,
                    Event.SUCCEED,
                    reason=f"rollout aborted: stays on r{back_to.number}",
                    desired_revision=back_to,
                    verified=True,
                    last_code="",
                    last_message="",
                )
            else:
                # Never applied one of ours (or offline): nothing is desired of it any more.
                row.desired_revision = None
                row.next_attempt_at = None
                row.save(update_fields=["desired_revision", "next_attempt_at"])
            if row.cordoned_by_rollout:
                uncordon.append(row)
        before = rollout.state
        rollout.state = RolloutState.CANCELLED
        rollout.finished_at = timezone.now()
        rollout.message = (
            f"aborted by {actor.username}: {kept} node(s) keep r{rollout.revision.number}, "
            f"{stopped} stay on what they ran"
        )
        rollout.save(update_fields=["state", "finished_at", "message"])
        record_event(
            actor=actor,
            action="rollout.aborted",
            obj=rollout,
            before={"state": before},
            after={"kept": kept, "stopped": stopped, "message": rollout.message},
        )
    cluster = rollout.pool.cluster
    for row in uncordon:
        try:
            draining.set_cordon(cluster, row.node.name, cordoned=False)
        except draining.ClusterUnreachable:
            continue  # the mark stays: the node page shows it cordoned by a rollout
        NodePolicyState.objects.filter(pk=row.pk, cordoned_by_rollout=True).update(cordoned_by_rollout=False)
    return rollout


def roll_back_rollout(*, actor: User, rollout_id: uuid.UUID | str) -> Rollout:
    """Return the nodes this rollout reached to the revision they ran before it: a new, higher
    revision carrying that bundle, rolled out at once (kind rollback); the rollout itself ends
    (aborted, unless it had finished). Returns the new rollout. Refused when there is nothing earlier,
    when it was rolled back already, or when another rollout holds the pool. Audited."""
    step = _Pass()
    with transaction.atomic():
        rollout = _locked(actor, rollout_id, "roll back")
        if rollout.from_revision is None:
            raise Conflict("Nothing earlier to roll back to on this pool.", code="rollout.nothing_earlier")
        if rollout.rolled_back_by_id is not None:
            raise Conflict("This rollout was already rolled back.", code="rollout.already_rolled_back")
        other = (
            Rollout.objects.filter(pool=rollout.pool, state__in=ACTIVE_STATES).exclude(pk=rollout.pk).first()
        )
        if other is not None:
            raise Conflict(
                f"Rollout of r{other.revision.number} is {other.state} on this pool: abort it first.",
                code="rollout.already_running",
            )
        rows = _lock_pool_rows(rollout.pool)
        was = rollout.state
        if was in ACTIVE_STATES:
            rollout.message = f"rolled back by {actor.username}"
            rollout.save(update_fields=["message"])
        back = begin_rollback(rollout, rows, step, actor=actor)
        record_event(
            actor=actor,
            action="rollout.rolled_back",
            obj=rollout,
            before={"state": was},
            after={"rollback": str(back.pk), "revision": back.revision.number},
        )
    cluster = rollout.pool.cluster
    push.publish(cluster_id=cluster.pk, nodes=step.publish)
    _act(cluster, step)
    return back
