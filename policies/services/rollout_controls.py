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
from policies.models import ACTIVE_STATES, NodePolicyState, Rollout
from policies.rollout_states import RolloutEvent, can, transition
from policies.services.delivery import release_rollout_nodes
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
        if not can(rollout.state, RolloutEvent.PAUSE):
            raise _refuse(rollout, "paused", "rollout.not_running")
        rollout.state = transition(rollout.state, RolloutEvent.PAUSE)
        rollout.save(update_fields=["state"])
        record_event(actor=actor, action="rollout.paused", obj=rollout, before={"state": "running"})
    return rollout


def resume_rollout(*, actor: User, rollout_id: uuid.UUID | str) -> Rollout:
    """Let a paused rollout go on where it stopped; the driver runs after commit. Audited."""
    with transaction.atomic():
        rollout = _locked(actor, rollout_id, "resume")
        if not can(rollout.state, RolloutEvent.RESUME):
            raise _refuse(rollout, "resumed", "rollout.not_paused")
        rollout.state = transition(rollout.state, RolloutEvent.RESUME)
        rollout.save(update_fields=["state"])
        record_event(actor=actor, action="rollout.resumed", obj=rollout, before={"state": "paused"})
        queue_advance(rollout.pk)
    return rollout


def abort_rollout(*, actor: User, rollout_id: uuid.UUID | str) -> Rollout:
    """Stop a running or paused rollout for good. Nodes that applied its revision keep it; the others
    stay on what they run (their desired revision goes back to it, so no bundle is handed out), and a
    node the rollout cordoned is uncordoned after commit. Locks the rollout and the pool's node rows.
    Audited."""
    with transaction.atomic():
        rollout = _locked(actor, rollout_id, "abort")
        if not can(rollout.state, RolloutEvent.ABORT):
            raise _refuse(rollout, "aborted", "rollout.finished")
        rows = _lock_pool_rows(rollout.pool)
        kept, stopped, uncordon = release_rollout_nodes(rollout=rollout, rows=rows, why="aborted")
        before = rollout.state
        rollout.state = transition(rollout.state, RolloutEvent.ABORT)
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
            after={"state": rollout.state, "kept": kept, "stopped": stopped, "message": rollout.message},
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
