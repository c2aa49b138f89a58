"""Rollouts: a revision reaching every node of a pool in waves, a planned MIG change per node, and a
roll back to the previous bundle when a node fails for good.

``advance_rollout`` is the driver: idempotent, called by its Celery task after every agent report
and periodically. It locks the rollout row, then the pool's node rows in name order (the same order
every caller takes), so a driver and an agent report never interleave on a node. Locks are FOR NO
KEY UPDATE: a report's write checks its row's foreign key to the rollout (FOR KEY SHARE), which a
plain FOR UPDATE on the rollout would block while the driver waits for that report's row: a deadlock.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from gpuplatform.accounts.models import User
from gpuplatform.audit.services import record_event, snapshot
from gpuplatform.errors import Conflict, Forbidden, NotFound, ValidationFailed
from inventory.models import Node, NodePool
from policies import draining, push, signing
from policies.models import (
    NodePolicyState,
    OperationKind,
    PolicyRevision,
    Rollout,
    RolloutState,
    SharingPolicy,
)
from policies.node_states import Event, NodeState
from policies.services.delivery import ADVANCE_TASK, fail_node, move
from policies.services.revisions import publish_policy

MIG_CONFIG = "nvidia.com/mig.config"
MIG_CONFIG_STATE = "nvidia.com/mig.config.state"


def queue_advance(rollout_id: uuid.UUID) -> None:
    """Queue the driver for ``rollout_id`` after the current transaction commits (by task name, so
    services need not import the tasks module that imports them)."""
    rollout = str(rollout_id)
    transaction.on_commit(lambda: current_app.signature(ADVANCE_TASK, args=[rollout]).delay())


def start_rollout(
    *,
    actor: User,
    pool_id: uuid.UUID,
    revision_id: uuid.UUID,
    max_unavailable: int = 1,
    approve_drain: bool = False,
) -> Rollout:
    """Start rolling ``revision_id`` out over its pool. Locks the pool row, so two starts on a pool
    serialise; a second while one runs is 409 ``rollout.already_running``. Audited."""
    if not actor.is_platform_admin:
        raise Forbidden("Only platform-admins roll out policies.")
    if max_unavailable < 1:
        raise ValidationFailed("max_unavailable must be at least 1.", code="invalid_max_unavailable")
    with transaction.atomic():
        pool = NodePool.objects.select_for_update().filter(pk=pool_id).first()
        if pool is None:
            raise NotFound("No such node pool.", code="pool_not_found", field="pool")
        revision = PolicyRevision.objects.filter(pk=revision_id, pool=pool).first()
        if revision is None:
            raise NotFound("No such revision on this pool.", code="revision_not_found", field="revision")
        running = Rollout.objects.filter(pool=pool, state=RolloutState.RUNNING).first()
        if running is not None:
            raise Conflict(
                f"Rollout {running.pk} of r{running.revision.number} is still running on this pool.",
                code="rollout.already_running",
            )
        last = (
            Rollout.objects.filter(pool=pool, state=RolloutState.SUCCEEDED)
            .select_related("revision")
            .order_by("-finished_at")
            .first()
        )
        try:
            with transaction.atomic():
                rollout = Rollout.objects.create(
                    pool=pool,
                    revision=revision,
                    from_revision=last.revision if last else revision.previous,
                    max_unavailable=max_unavailable,
                    approve_drain=approve_drain,
                    created_by=actor,
                )
        except IntegrityError:
            raise Conflict(
                "A rollout is already running on this pool.", code="rollout.already_running"
            ) from None
        record_event(
            actor=actor,
            action="rollout.started",
            obj=rollout,
            after={
                **snapshot(rollout, ["pool_id", "max_unavailable", "approve_drain"]),
                "revision": revision.number,
                "from_revision": rollout.from_revision.number if rollout.from_revision else None,
            },
        )
        queue_advance(rollout.pk)
    return rollout


@dataclass
class _Pass:
    """What one driver pass decided, acted on after commit."""

    publish: dict[uuid.UUID, tuple[uuid.UUID, str]] = field(default_factory=dict)
    follow_up: uuid.UUID | None = None


def advance_rollout(*, rollout_id: uuid.UUID) -> Rollout | None:
    """One pass of the driver over a running rollout (idempotent; a finished one is left alone)."""
    step = _Pass()
    with transaction.atomic():
        rollout = (
            Rollout.objects.select_for_update(of=("self",), no_key=True)
            .select_related("pool", "pool__cluster", "revision", "from_revision")
            .filter(pk=rollout_id)
            .first()
        )
        if rollout is None or rollout.state != RolloutState.RUNNING:
            return rollout
        rows = _lock_pool_rows(rollout.pool)
        _drive(rollout, rows, step)
    cluster_id = rollout.pool.cluster_id
    push.publish(cluster_id=cluster_id, nodes=step.publish)
    return rollout


def _lock_pool_rows(pool: NodePool) -> list[NodePolicyState]:
    nodes = list(Node.objects.filter(pool=pool, present=True).order_by("name").values_list("pk", flat=True))
    existing = set(NodePolicyState.objects.filter(node_id__in=nodes).values_list("node_id", flat=True))
    NodePolicyState.objects.bulk_create(
        [NodePolicyState(node_id=n) for n in nodes if n not in existing], ignore_conflicts=True
    )
    return list(
        NodePolicyState.objects.select_for_update(of=("self",), no_key=True)
        .select_related("node", "desired_revision")
        .filter(node_id__in=nodes)
        .order_by("node__name")
    )


def _drive(rollout: Rollout, rows: list[NodePolicyState], step: _Pass) -> None:
    now = timezone.now()
    target = rollout.revision
    mine = [r for r in rows if r.rollout_id == rollout.pk and r.desired_revision_id == target.pk]
    exhausted = [
        r for r in mine if r.state == NodeState.FAILED and r.attempts >= settings.POLICY_MAX_ATTEMPTS
    ]
    if exhausted:
        _finish_failed(rollout, rows, exhausted, step)
        return
    for row in mine:
        if row.state == NodeState.FAILED and row.next_attempt_at and row.next_attempt_at <= now:
            move(row, Event.RETRY, reason=f"attempt {row.attempts + 1} after {row.last_code}")
            _deliver(row, rollout, step)
        elif row.state == NodeState.DRIFT:
            move(row, Event.RETRY, reason="drift under a running rollout: delivered again")
            _deliver(row, rollout, step)
        elif row.state == NodeState.BLOCKED:
            _prepare(row, rollout, step)
        elif row.state == NodeState.APPLIED and not row.verified:
            _verify(row, rollout)
    unavailable = sum(1 for r in mine if not (r.state == NodeState.APPLIED and r.verified))
    fresh = [r for r in rows if not (r.rollout_id == rollout.pk and r.desired_revision_id == target.pk)]
    room = rollout.max_unavailable - unavailable
    if fresh and room > 0:
        rollout.waves_started += 1
        rollout.save(update_fields=["waves_started"])
        for row in fresh[:room]:
            _assign(row, rollout, step)
    if all(r.rollout_id == rollout.pk and r.state == NodeState.APPLIED and r.verified for r in rows):
        rollout.state = RolloutState.SUCCEEDED
        rollout.finished_at = timezone.now()
        rollout.save(update_fields=["state", "finished_at"])
        record_event(
            actor=None,
            action="rollout.succeeded",
            obj=rollout,
            after={"revision": target.number, "nodes": len(rows), "waves": rollout.waves_started},
        )


def _deliver(row: NodePolicyState, rollout: Rollout, step: _Pass) -> None:
    step.publish[row.node_id] = (rollout.revision_id, rollout.kind)


def _assign(row: NodePolicyState, rollout: Rollout, step: _Pass) -> None:
    target = rollout.revision
    move(
        row,
        Event.ASSIGN,
        reason=f"wave {rollout.waves_started} of rollout {rollout.pk}",
        rollout=rollout,
        desired_revision=target,
        desired_operation=rollout.kind,
        wave=rollout.waves_started,
        attempts=0,
        next_attempt_at=None,
        last_code="",
        last_message="",
        verified=False,
    )
    if row.applied_hash == target.content_hash and row.applied_revision is not None:
        # The node already runs this bundle (a roll back to what it never left): nothing to deliver.
        move(row, Event.SUCCEED, reason="already runs this bundle", verified=True)
        return
    if target.needs_drain:
        _prepare(row, rollout, step)
    else:
        _deliver(row, rollout, step)


def _prepare(row: NodePolicyState, rollout: Rollout, step: _Pass) -> None:
    """A planned MIG change: deliver only to a node empty of GPU work. With approval, cordon it and
    evict its GPU pods through the Eviction API; a PodDisruptionBudget's refusal keeps it blocked."""
    cluster = rollout.pool.cluster
    node = row.node.name
    try:
        pods = draining.gpu_pods(cluster, node)
        if pods and rollout.approve_drain:
            if not row.cordoned_by_rollout:
                draining.set_cordon(cluster, node, cordoned=True)
                row.cordoned_by_rollout = True
                row.save(update_fields=["cordoned_by_rollout"])
                record_event(actor=None, action="node_policy.cordoned", obj=row, after={"node": node})
            outcomes = {str(pod): draining.evict(cluster, pod) for pod in pods}
            record_event(actor=None, action="node_policy.evicted", obj=row, after={"node": node, **outcomes})
            pods = draining.gpu_pods(cluster, node)
            refused = [p for p, outcome in outcomes.items() if outcome == "refused"]
            reason = (
                f"eviction refused by a PodDisruptionBudget for {', '.join(refused)}"
                if refused
                else f"waiting for evicted pods to end: {', '.join(map(str, pods))}"
            )
        else:
            reason = (
                f"{len(pods)} GPU pod(s) run on the node: {', '.join(map(str, pods[:5]))}; drain not approved"
            )
    except draining.ClusterUnreachable as exc:
        pods, reason = [None], f"cluster unreachable: {exc}"  # type: ignore[list-item]
    if pods:
        if row.state != NodeState.BLOCKED or row.last_message != reason:
            move(row, Event.BLOCK, reason=reason, last_code="gpu_pods_running", last_message=reason[:2000])
        return
    if row.state == NodeState.BLOCKED:
        move(row, Event.UNBLOCK, reason="node empty of GPU work", last_code="", last_message="")
    _deliver(row, rollout, step)


def _verify(row: NodePolicyState, rollout: Rollout) -> None:
    """An acked revision counts once the node shows it: for a planned MIG change, the node's labels
    (mig-manager's state) and the agent's NVML report; then the node is uncordoned."""
    target = rollout.revision
    if not target.needs_drain:
        row.verified = True
        row.save(update_fields=["verified"])
        return
    cluster = rollout.pool.cluster
    wanted = (target.bundle.get("labels") or {}).get(MIG_CONFIG)
    try:
        labels = draining.node_labels(cluster, row.node.name)
    except draining.ClusterUnreachable:
        return  # next pass
    state = labels.get(MIG_CONFIG_STATE)
    problem = ""
    if wanted and labels.get(MIG_CONFIG) != wanted:
        problem = f"node label {MIG_CONFIG} is {labels.get(MIG_CONFIG)!r}, not {wanted!r}"
    elif state == "failed":
        problem = "mig-manager reports nvidia.com/mig.config.state=failed"
    elif state not in (None, "success"):
        return  # still pending: next pass
    elif wanted and wanted != "all-disabled" and row.gpus and not all(g.get("mig_mode") for g in row.gpus):
        problem = "the agent's NVML report shows GPUs without MIG mode"
    if problem:
        # Verification failing is final for this revision: retrying would deliver what was applied.
        row.attempts = settings.POLICY_MAX_ATTEMPTS - 1
        fail_node(row, "verification_failed", problem, timezone.now())
        return
    if row.cordoned_by_rollout:
        try:
            draining.set_cordon(cluster, row.node.name, cordoned=False)
        except draining.ClusterUnreachable:
            return  # next pass uncordons
        row.cordoned_by_rollout = False
        record_event(actor=None, action="node_policy.uncordoned", obj=row, after={"node": row.node.name})
    row.verified = True
    row.save(update_fields=["verified", "cordoned_by_rollout"])
    record_event(
        actor=None, action="node_policy.verified", obj=row, after={"node": row.node.name, **_labels(labels)}
    )


def _labels(labels: dict[str, str]) -> dict[str, Any]:
    return {k: v for k, v in labels.items() if k in (MIG_CONFIG, MIG_CONFIG_STATE)}


def _finish_failed(
    rollout: Rollout, rows: list[NodePolicyState], exhausted: list[NodePolicyState], step: _Pass
) -> None:
    """A node failed for good: the rollout fails, and unless it was itself a roll back, a new higher
    revision carrying the previous bundle is rolled out (operation kind rollback)."""
    names = ", ".join(f"{r.node.name} ({r.last_code})" for r in exhausted)
    rollout.state = RolloutState.FAILED
    rollout.finished_at = timezone.now()
    previous = rollout.from_revision
    if rollout.kind == OperationKind.ROLLBACK or previous is None:
        rollout.message = f"failed on {names}; nothing earlier to roll back to"
        rollout.save(update_fields=["state", "finished_at", "message"])
        record_event(actor=None, action="rollout.failed", obj=rollout, after={"message": rollout.message})
        return
    target = rollout.revision
    note = f"rollback of r{target.number} to r{previous.number}"
    if SharingPolicy.objects.filter(pool=rollout.pool).exists():
        # The one maker of revisions: the next number, r{previous}'s bundle verbatim, audited there.
        back = publish_policy(pool_id=rollout.pool_id, actor=None, note=note, rollback_of=previous.number)
    else:
        # A pool whose revisions were made without a declared policy (imported bundles): the same
        # revision by hand, numbers still only growing.
        number = (PolicyRevision.objects.filter(pool=rollout.pool).aggregate(n=Max("number"))["n"] or 0) + 1
        back = PolicyRevision.objects.create(
            pool=rollout.pool,
            number=number,
            previous=target,
            policy={**previous.policy, "rollback_of": previous.number},
            bundle=previous.bundle,
            content_hash=previous.content_hash,
            signature=signing.sign(previous.content_hash.encode()),
            key_id=signing.key_id(),
            needs_drain=target.needs_drain or previous.needs_drain,
            note=note,
        )
    number = back.number
    record_event(
        actor=None,
        action="policy_revision.rollback_created",
        obj=back,
        after={"number": number, "bundle_of": previous.number, "replaces": target.number},
    )
    rollout.message = f"failed on {names}; rolled back to r{previous.number} as r{number}"
    rollout.save(update_fields=["state", "finished_at", "message"])
    rollback = Rollout.objects.create(
        pool=rollout.pool,
        revision=back,
        from_revision=target,
        kind=OperationKind.ROLLBACK,
        max_unavailable=rollout.max_unavailable,
        approve_drain=rollout.approve_drain,
    )
    rollout.rolled_back_by = rollback
    rollout.save(update_fields=["rolled_back_by"])
    record_event(actor=None, action="rollout.failed", obj=rollout, after={"message": rollout.message})
    record_event(
        actor=None,
        action="rollout.started",
        obj=rollback,
        after={"revision": number, "kind": "rollback", "from_revision": target.number},
    )
    # The roll back starts at once with the nodes the failed rollout reached, failed ones first.
    rollback.waves_started = 1
    rollback.save(update_fields=["waves_started"])
    for row in sorted(
        (r for r in rows if r.rollout_id == rollout.pk),
        key=lambda r: (r.state != NodeState.FAILED, r.node.name),
    ):
        _assign(row, rollback, step)
    queue_advance(rollback.pk)
