"""What a node's agent is told and what it tells back: the desired revision, status and heartbeats.

Every state change goes through policies/node_states.py and is audited in its transaction. The
agent's own reports lock only its node's row (select_for_update), so a report and the rollout driver
never interleave on one node.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from gpuplatform.audit.services import record_event
from gpuplatform.db.after_commit import queue_after_commit
from gpuplatform.errors import Conflict
from policies.models import NodeAgent, NodePolicyState, PolicyRevision, RolloutState
from policies.node_states import DELIVERABLE, Event, NodeState, can, retry_delay, transition
from policies.services.agents import AgentUnauthorized, hash_secret

ADVANCE_TASK = "policies.advance_rollout"


@dataclass(frozen=True)
class Delivery:
    revision_id: uuid.UUID
    number: int
    operation: str


def pending_delivery(*, node_id: uuid.UUID, applied: int) -> Delivery | None:
    """The revision to hand the node's agent now, if any: its desired revision, when the node is in a
    deliverable state and the agent has not applied that number. One query."""
    row = (
        NodePolicyState.objects.filter(node_id=node_id)
        .values("desired_revision_id", "desired_revision__number", "desired_operation", "state")
        .first()
    )
    if row is None or row["desired_revision_id"] is None or row["state"] not in DELIVERABLE:
        return None
    if row["desired_revision__number"] == applied:
        return None
    return Delivery(row["desired_revision_id"], row["desired_revision__number"], row["desired_operation"])


def authenticate_poll(*, credential: str, applied: int) -> tuple[NodeAgent, Delivery | None]:
    """The live agent holding ``credential`` and what to hand it now (as ``pending_delivery``), in
    ONE query: the long poll's only read. AgentUnauthorized when the credential is not live."""
    agent = (
        NodeAgent.objects.select_related("node", "node__pool", "cluster")
        .annotate(
            desired_id=F("node__policy_state__desired_revision_id"),
            desired_number=F("node__policy_state__desired_revision__number"),
            desired_operation=F("node__policy_state__desired_operation"),
            delivery_state=F("node__policy_state__state"),
        )
        .filter(credential_hash=hash_secret(credential), revoked_at__isnull=True)
        .order_by()
        .first()
    )
    if agent is None:
        raise AgentUnauthorized("The agent credential is unknown, rotated or revoked.")
    found = None
    desired = agent.desired_id
    if desired is not None and agent.delivery_state in DELIVERABLE and agent.desired_number != applied:
        found = Delivery(desired, agent.desired_number, agent.desired_operation)
    return agent, found


def move(row: NodePolicyState, event: Event, *, reason: str = "", **changes: Any) -> None:
    """Apply ``event`` to a locked row (plus field ``changes``), save and audit. Callers hold the lock
    and the transaction."""
    before = row.state
    row.state = transition(row.state, event)
    for field, value in changes.items():
        setattr(row, field, value)
    row.state_changed_at = timezone.now()
    row.save()
    record_event(
        actor=None,
        action=f"node_policy.{row.state}",
        obj=row,
        before={"state": before},
        after={
            "state": row.state,
            "event": str(event),
            "node": row.node.name,
            "desired_revision": row.desired_revision.number if row.desired_revision else None,
            "applied_revision": row.applied_revision,
            "reason": reason,
        },
    )


def _locked_state(agent: NodeAgent) -> NodePolicyState:
    row, _ = NodePolicyState.objects.get_or_create(node_id=agent.node_id)
    return (
        NodePolicyState.objects.select_for_update(of=("self",), no_key=True)
        .select_related("node", "desired_revision", "rollout")
        .get(pk=row.pk)
    )


def _queue_driver(row: NodePolicyState) -> None:
    """Queue the rollout driver (by task name: services do not import the tasks that import them)."""
    if row.rollout_id and row.rollout and row.rollout.state == RolloutState.RUNNING:
        queue_after_commit(ADVANCE_TASK, str(row.rollout_id))


def report_status(
    *,
    agent: NodeAgent,
    revision: int,
    content_hash: str,
    state: str,
    code: str = "",
    message: str = "",
    gpus: list[dict[str, Any]] | None = None,
) -> NodePolicyState:
    """The agent's report on the revision it was sent. Locks its node's row. A report on a revision
    never sent to the node is 409 ``revision_unknown``; on one since superseded, 409
    ``revision_superseded``; a repeated report changes nothing (idempotent)."""
    with transaction.atomic():
        row = _locked_state(agent)
        desired = row.desired_revision
        if desired is None or revision != desired.number:
            known = PolicyRevision.objects.filter(pool_id=row.node.pool_id, number=revision).exists()
            if desired is None or not known or revision > desired.number:
                raise Conflict(f"Revision {revision} was never sent to this node.", code="revision_unknown")
            raise Conflict(
                f"Revision {revision} is superseded by {desired.number}.", code="revision_superseded"
            )
        now = timezone.now()
        if gpus is not None:
            row.gpus = gpus
        if state == "applying":
            if can(row.state, Event.START) and row.state != NodeState.APPLYING:
                move(row, Event.START)
        elif state == "applied":
            if content_hash != desired.content_hash:
                fail_node(
                    row, "hash_mismatch", f"applied hash {content_hash} is not {desired.content_hash}", now
                )
            elif row.state != NodeState.APPLIED or row.applied_revision != revision:
                move(
                    row,
                    Event.SUCCEED,
                    applied_revision=revision,
                    applied_hash=content_hash,
                    attempts=0,
                    next_attempt_at=None,
                    last_code="",
                    last_message="",
                    verified=False,
                )
        elif state == "failed" and row.state != NodeState.FAILED:
            fail_node(row, code or "apply_failed", message, now)
        row.last_heartbeat_at = now
        row.save(update_fields=["gpus", "last_heartbeat_at"])
        NodeAgent.objects.filter(pk=agent.pk).update(last_seen_at=now)
        _queue_driver(row)
    return row


def fail_node(row: NodePolicyState, code: str, message: str, now: Any) -> None:
    attempts = row.attempts + 1
    delay = retry_delay(
        attempts,
        base_seconds=settings.POLICY_RETRY_BASE_SECONDS,
        cap_seconds=settings.POLICY_RETRY_CAP_SECONDS,
    )
    move(
        row,
        Event.FAIL,
        reason=code,
        attempts=attempts,
        next_attempt_at=now + delay,
        last_code=code[:100],
        last_message=message[:2000],
    )


def record_heartbeat(
    *, agent: NodeAgent, applied_revision: int | None, content_hash: str, gpus: list[dict[str, Any]] | None
) -> NodePolicyState:
    """A heartbeat: the node is alive, runs ``content_hash``; offline comes back, drift is seen."""
    now = timezone.now()
    with transaction.atomic():
        row = _locked_state(agent)
        desired_hash = row.desired_revision.content_hash if row.desired_revision else ""
        if row.state == NodeState.OFFLINE:
            move(row, Event.RETURN, reason="heartbeat")
            if desired_hash and content_hash == desired_hash:
                move(row, Event.SUCCEED, applied_revision=applied_revision, applied_hash=content_hash)
        elif desired_hash and row.state in (NodeState.APPLIED, NodeState.DRIFT):
            if content_hash != desired_hash and row.state == NodeState.APPLIED:
                move(row, Event.HASH_MISMATCH, reason=f"node runs {content_hash or 'nothing'}")
            elif content_hash == desired_hash and row.state == NodeState.DRIFT:
                move(row, Event.HASH_MATCH)
        if content_hash:
            row.applied_hash = content_hash
        if gpus is not None:
            row.gpus = gpus
        row.last_heartbeat_at = now
        row.save(update_fields=["gpus", "last_heartbeat_at", "applied_hash"])
        NodeAgent.objects.filter(pk=agent.pk).update(last_seen_at=now)
        _queue_driver(row)
    return row


def mark_offline_nodes(*, now: Any = None) -> int:
    """Nodes whose agent has been silent for AGENT_OFFLINE_AFTER seconds go offline. Idempotent;
    claims each row with a lock, skipping rows another sweep holds."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.AGENT_OFFLINE_AFTER)
    moved = 0
    with transaction.atomic():
        rows = (
            NodePolicyState.objects.select_for_update(skip_locked=True, of=("self",), no_key=True)
            .select_related("node", "desired_revision")
            .filter(last_heartbeat_at__lt=cutoff)
            .exclude(state=NodeState.OFFLINE)
        )
        for row in rows:
            move(row, Event.SILENCE, reason=f"no heartbeat since {row.last_heartbeat_at:%Y-%m-%dT%H:%M:%SZ}")
            moved += 1
    return moved


def release_rollout_nodes(
    *, rollout: Any, rows: list[NodePolicyState], why: str
) -> tuple[int, int, list[NodePolicyState]]:
    """A rollout stops for good (aborted, or stopped by the platform): its nodes that applied its
    revision keep it; the others stay on what they run (their desired revision goes back to it, or to
    none, so no bundle of the rollout is handed out any more). The caller holds the rollout's and the
    pool's node rows' locks and uncordons, after commit, the rows returned (the rollout cordoned them).
    Returns (kept, stopped, to uncordon). Each node's move is audited."""
    mine = [r for r in rows if r.rollout_id == rollout.pk]
    numbers = {r.applied_revision for r in mine if r.applied_revision}
    by_number = {
        rev.number: rev for rev in PolicyRevision.objects.filter(pool=rollout.pool, number__in=numbers)
    }
    kept, stopped, uncordon = 0, 0, []
    for row in mine:
        if row.state == NodeState.APPLIED and row.desired_revision_id == rollout.revision_id:
            kept += 1
            continue
        stopped += 1
        if row.state == NodeState.BLOCKED:
            move(row, Event.UNBLOCK, reason=f"rollout {rollout.pk} {why}")
        back_to = by_number.get(row.applied_revision or 0)
        if back_to is not None and can(row.state, Event.SUCCEED):
            move(
                row,
                Event.SUCCEED,
                reason=f"rollout {why}: stays on r{back_to.number}",
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
    return kept, stopped, uncordon
