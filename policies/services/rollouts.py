"""Rollouts: a revision reaching every node of a pool in waves, a planned MIG change per node, and a
roll back to the previous bundle when a node fails for good.

``advance_rollout`` is the driver: idempotent, called by its Celery task after every agent report
and periodically. Slow I/O holds no lock: a pass reads the cluster first (the GPU pods and labels of
the nodes it may touch, no transaction open), then decides under the locks from the rows as read
under them and those observations, then acts on the cluster (cordon, evict, uncordon) after commit.
A pass that acted queues the next one when what it did lets the rollout move on.

Under the locks: the rollout row, then the pool's node rows in name order (the same order every
caller takes), so a driver and an agent report never interleave on a node. Locks are FOR NO KEY
UPDATE: a report's write checks its row's foreign key to the rollout (FOR KEY SHARE), which a plain
FOR UPDATE on the rollout would block while the driver waits for that report's row: a deadlock.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from gpuplatform.accounts.models import User
from gpuplatform.audit.services import record_event, snapshot
from gpuplatform.db.after_commit import queue_after_commit
from gpuplatform.errors import Conflict, Forbidden, NotFound, ValidationFailed
from inventory.models import Cluster, Node, NodePool
from policies import draining, push, signing
from policies.models import (
    ACTIVE_STATES,
    NodePolicyState,
    OperationKind,
    PolicyRevision,
    Rollout,
    RolloutState,
    SharingPolicy,
)
from policies.node_states import Event, NodeState
from policies.rollout_states import RolloutEvent, can, transition
from policies.services.delivery import ADVANCE_TASK, fail_node, move
from policies.services.mig_ownership import refuse_driver_managed_mig, stop_if_driver_managed
from policies.services.revisions import flavors_follow_revision, publish_policy

log = logging.getLogger(__name__)

MIG_CONFIG = "nvidia.com/mig.config"
MIG_CONFIG_STATE = "nvidia.com/mig.config.state"


def queue_advance(rollout_id: uuid.UUID) -> None:
    """Queue the driver for ``rollout_id`` after the current transaction commits (by task name, so
    services need not import the tasks module that imports them)."""
    queue_after_commit(ADVANCE_TASK, str(rollout_id))


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
    refuse_driver_managed_mig(actor=actor, pool_id=pool_id, revision_id=revision_id)
    with transaction.atomic():
        pool = NodePool.objects.select_for_update().filter(pk=pool_id).first()
        if pool is None:
            raise NotFound("No such node pool.", code="pool_not_found", field="pool")
        revision = PolicyRevision.objects.filter(pk=revision_id, pool=pool).first()
        if revision is None:
            raise NotFound("No such revision on this pool.", code="revision_not_found", field="revision")
        running = Rollout.objects.filter(pool=pool, state__in=ACTIVE_STATES).first()
        if running is not None:
            raise Conflict(
                f"Rollout {running.pk} of r{running.revision.number} is still {running.state} on this pool.",
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


@dataclass(frozen=True)
class _NodeView:
    """What the cluster showed of one node before the pass took its locks; ``None``: not read."""

    pods: list[draining.PodRef] | None = None
    labels: dict[str, str] | None = None
    unreachable: str = ""  # the error, when the cluster could not be reached


@dataclass(frozen=True)
class _Drain:
    """Cordon the node and evict its GPU pods, after commit."""

    row: NodePolicyState
    rollout_id: uuid.UUID
    pods: tuple[draining.PodRef, ...]


@dataclass
class _Pass:
    """One driver pass: what it saw before locking, and what it decided to do after commit."""

    seen: dict[str, _NodeView] = field(default_factory=dict)
    publish: dict[uuid.UUID, tuple[uuid.UUID, str]] = field(default_factory=dict)
    drains: list[_Drain] = field(default_factory=list)
    uncordons: list[NodePolicyState] = field(default_factory=list)
    # Rollouts to pass over again at once: a node needed a look that was not taken before the locks.
    again: set[uuid.UUID] = field(default_factory=set)


def advance_rollout(*, rollout_id: uuid.UUID) -> Rollout | None:
    """One pass of the driver over a running rollout (idempotent; a finished one is left alone).
    Reads the cluster, then locks the rollout and its pool's node rows to decide, then acts on the
    cluster after commit: no cluster call is made while the rows are locked."""
    step = _Pass(seen=_observe(rollout_id))
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
    cluster = rollout.pool.cluster
    push.publish(cluster_id=cluster.pk, nodes=step.publish)
    _act(cluster, step)
    return rollout


def _observe(rollout_id: uuid.UUID) -> dict[str, _NodeView]:
    """Read, without locks, what this pass may need of the cluster: the GPU pods of the nodes it may
    drain and the labels of those it may verify. The node set is a guess from rows read without the
    lock; the decision re-checks each row under it and passes again for a node not looked at."""
    rollout = (
        Rollout.objects.select_related("pool__cluster", "revision", "from_revision")
        .filter(pk=rollout_id, state=RolloutState.RUNNING)
        .first()
    )
    if rollout is None:
        return {}
    target, previous = rollout.revision, rollout.from_revision
    if not (target.needs_drain or (previous is not None and previous.needs_drain)):
        return {}  # nothing of this rollout (or of a roll back it may start) needs the cluster
    nodes = list(
        Node.objects.filter(pool_id=rollout.pool_id, present=True).order_by("name").values_list("pk", "name")
    )
    rows = {r.node_id: r for r in NodePolicyState.objects.filter(node_id__in=[pk for pk, _ in nodes])}

    def mine(node_id: uuid.UUID) -> NodePolicyState | None:
        row = rows.get(node_id)
        ours = row is not None and row.rollout_id == rollout.pk and row.desired_revision_id == target.pk
        return row if ours else None

    pods_for: set[str] = set()
    labels_for: set[str] = set()
    if any(_exhausted(row) for pk, _ in nodes if (row := mine(pk)) is not None):
        # A roll back starts: it takes every node this rollout reached.
        pods_for = {name for pk, name in nodes if (r := rows.get(pk)) and r.rollout_id == rollout.pk}
    elif target.needs_drain:
        fresh = [name for pk, name in nodes if mine(pk) is None]
        busy = 0  # nodes out of service that no verification in this pass can bring back
        for pk, name in nodes:
            if (row := mine(pk)) is None:
                continue
            if row.state == NodeState.BLOCKED:
                pods_for.add(name)
            if row.state == NodeState.APPLIED and not row.verified:
                labels_for.add(name)
            elif row.state != NodeState.APPLIED:
                busy += 1
        pods_for.update(fresh[: max(0, rollout.max_unavailable - busy)])
    cluster = rollout.pool.cluster
    seen: dict[str, _NodeView] = {}
    for name in sorted(pods_for | labels_for):
        try:
            seen[name] = _NodeView(
                pods=draining.gpu_pods(cluster, name) if name in pods_for else None,
                labels=draining.node_labels(cluster, name) if name in labels_for else None,
            )
        except draining.ClusterUnreachable as exc:
            seen[name] = _NodeView(unreachable=str(exc))
    return seen


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


def _exhausted(row: NodePolicyState) -> bool:
    """Failed for good: the rollout fails and rolls back."""
    return row.state == NodeState.FAILED and row.attempts >= settings.POLICY_MAX_ATTEMPTS


def _drive(rollout: Rollout, rows: list[NodePolicyState], step: _Pass) -> None:
    """The decision, under the locks: database rows and ``step.seen`` only, no cluster call."""
    stopped = stop_if_driver_managed(rollout=rollout, rows=rows)
    if stopped is not None:
        step.uncordons.extend(stopped)  # the nodes it cordoned for a MIG change it will not make
        return
    now = timezone.now()
    target = rollout.revision
    mine = [r for r in rows if r.rollout_id == rollout.pk and r.desired_revision_id == target.pk]
    exhausted = [r for r in mine if _exhausted(r)]
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
            _verify(row, rollout, step)
    unavailable = sum(1 for r in mine if not (r.state == NodeState.APPLIED and r.verified))
    fresh = [r for r in rows if not (r.rollout_id == rollout.pk and r.desired_revision_id == target.pk)]
    room = rollout.max_unavailable - unavailable
    if fresh and room > 0:
        rollout.waves_started += 1
        rollout.save(update_fields=["waves_started"])
        for row in fresh[:room]:
            _assign(row, rollout, step)
    if all(r.rollout_id == rollout.pk and r.state == NodeState.APPLIED and r.verified for r in rows):
        rollout.state = transition(rollout.state, RolloutEvent.SUCCEED)
        rollout.finished_at = timezone.now()
        rollout.save(update_fields=["state", "finished_at"])
        # Every node now advertises what the revision names: the flavors follow, not before.
        renamed = flavors_follow_revision(revision=target, actor=None)
        record_event(
            actor=None,
            action="rollout.succeeded",
            obj=rollout,
            after={
                "revision": target.number,
                "nodes": len(rows),
                "waves": rollout.waves_started,
                "flavors_renamed": renamed,
            },
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
    """A planned MIG change: deliver only to a node empty of GPU work. With approval, the node is
    cordoned and its GPU pods evicted through the Eviction API after commit; a PodDisruptionBudget's
    refusal keeps it blocked."""
    node = row.node.name
    view = step.seen.get(node, _NodeView())
    if view.unreachable:
        reason = f"cluster unreachable: {view.unreachable}"
    elif view.pods is None:
        reason = "waiting for a look at the node's GPU pods"
        step.again.add(rollout.pk)
    elif view.pods and rollout.approve_drain:
        if not row.cordoned_by_rollout:
            # Marked before the cordon is made: a pass that dies in between leaves a mark that the
            # verification clears with an uncordon (harmless), never a cordon nobody lifts.
            row.cordoned_by_rollout = True
            row.save(update_fields=["cordoned_by_rollout"])
            record_event(actor=None, action="node_policy.cordoned", obj=row, after={"node": node})
        step.drains.append(_Drain(row=row, rollout_id=rollout.pk, pods=tuple(view.pods)))
        if row.state == NodeState.BLOCKED:
            return  # the eviction after commit says how it went
        reason = f"draining: evicting {', '.join(map(str, view.pods))}"
    elif view.pods:
        pods = view.pods
        reason = (
            f"{len(pods)} GPU pod(s) run on the node: {', '.join(map(str, pods[:5]))}; drain not approved"
        )
    else:
        if row.state == NodeState.BLOCKED:
            move(row, Event.UNBLOCK, reason="node empty of GPU work", last_code="", last_message="")
        _deliver(row, rollout, step)
        return
    if row.state != NodeState.BLOCKED or row.last_message != reason:
        move(row, Event.BLOCK, reason=reason, last_code="gpu_pods_running", last_message=reason[:2000])


def _verify(row: NodePolicyState, rollout: Rollout, step: _Pass) -> None:
    """An acked revision counts once the node shows it: for a planned MIG change, the node's labels
    (mig-manager's state) and the agent's NVML report; a node the rollout cordoned is uncordoned
    after commit, and counts on the pass after that."""
    target = rollout.revision
    if not target.needs_drain:
        row.verified = True
        row.save(update_fields=["verified"])
        return
    view = step.seen.get(row.node.name, _NodeView())
    if view.labels is None:
        if not view.unreachable:
            step.again.add(rollout.pk)
        return  # next pass
    labels = view.labels
    wanted = (target.bundle.get("labels") or {}).get(MIG_CONFIG)
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
        step.uncordons.append(row)
        return
    row.verified = True
    row.save(update_fields=["verified"])
    record_event(
        actor=None, action="node_policy.verified", obj=row, after={"node": row.node.name, **_labels(labels)}
    )


def _act(cluster: Cluster, step: _Pass) -> None:
    """After commit, no lock held: the cluster calls the pass decided on. Each outcome is recorded
    in a short transaction of its own, and a change that lets the rollout move on queues a pass."""
    for drain in step.drains:
        _drain(cluster, drain)
    for row in step.uncordons:
        try:
            draining.set_cordon(cluster, row.node.name, cordoned=False)
        except draining.ClusterUnreachable as exc:
            log.warning("uncordon of %s failed, the next pass retries: %s", row.node.name, exc)
            continue
        with transaction.atomic():
            # Only if no later pass got there first: the mark is the node's, not this pass's.
            if NodePolicyState.objects.filter(pk=row.pk, cordoned_by_rollout=True).update(
                cordoned_by_rollout=False
            ):
                record_event(
                    actor=None, action="node_policy.uncordoned", obj=row, after={"node": row.node.name}
                )
            if row.rollout_id is not None:
                queue_advance(row.rollout_id)  # the node counts once verified, on that pass
    for rollout_id in step.again:
        queue_advance(rollout_id)


def _drain(cluster: Cluster, drain: _Drain) -> None:
    """Cordon (again: idempotent), evict the GPU pods through the Eviction API, look again."""
    row, node = drain.row, drain.row.node.name
    try:
        draining.set_cordon(cluster, node, cordoned=True)
        outcomes = {str(pod): draining.evict(cluster, pod) for pod in drain.pods}
        left = draining.gpu_pods(cluster, node)
    except draining.ClusterUnreachable as exc:
        outcomes, left, message = {}, list(drain.pods), f"cluster unreachable: {exc}"
    else:
        refused = [p for p, outcome in outcomes.items() if outcome == "refused"]
        message = (
            f"eviction refused by a PodDisruptionBudget for {', '.join(refused)}"
            if refused
            else f"waiting for evicted pods to end: {', '.join(map(str, left))}"
        )
    with transaction.atomic():
        if outcomes:
            record_event(actor=None, action="node_policy.evicted", obj=row, after={"node": node, **outcomes})
        if left:
            # Still blocked by this rollout (a later pass may have moved it on): say why.
            NodePolicyState.objects.filter(
                pk=row.pk, state=NodeState.BLOCKED, rollout_id=drain.rollout_id
            ).exclude(last_message=message[:2000]).update(last_message=message[:2000])
        else:
            queue_advance(drain.rollout_id)  # empty now: the next pass delivers


def _labels(labels: dict[str, str]) -> dict[str, Any]:
    return {k: v for k, v in labels.items() if k in (MIG_CONFIG, MIG_CONFIG_STATE)}


def _finish_failed(
    rollout: Rollout, rows: list[NodePolicyState], exhausted: list[NodePolicyState], step: _Pass
) -> None:
    """A node failed for good: the rollout fails, and unless it was itself a roll back, a new higher
    revision carrying the previous bundle is rolled out (operation kind rollback)."""
    names = ", ".join(f"{r.node.name} ({r.last_code})" for r in exhausted)
    rollout.state = transition(rollout.state, RolloutEvent.FAIL)
    rollout.finished_at = timezone.now()
    previous = rollout.from_revision
    if rollout.kind == OperationKind.ROLLBACK or previous is None:
        rollout.message = f"failed on {names}; nothing earlier to roll back to"
        rollout.save(update_fields=["state", "finished_at", "message"])
        record_event(actor=None, action="rollout.failed", obj=rollout, after={"message": rollout.message})
        return
    back = begin_rollback(rollout, rows, step, actor=None)
    rollout.message = f"failed on {names}; rolled back to r{previous.number} as r{back.revision.number}"
    rollout.save(update_fields=["state", "finished_at", "message"])
    record_event(actor=None, action="rollout.failed", obj=rollout, after={"message": rollout.message})


def begin_rollback(
    rollout: Rollout, rows: list[NodePolicyState], step: _Pass, *, actor: User | None
) -> Rollout:
    """Make the next revision carrying ``rollout.from_revision``'s bundle and start rolling it out at
    once over the nodes ``rollout`` reached, failed ones first. The caller holds the rollout's and
    the pool's node rows' locks, sets ``rollout``'s own final state, and acts on ``step`` after
    commit. Audited (the new revision and the new rollout)."""
    previous = rollout.from_revision
    assert previous is not None
    target = rollout.revision
    note = f"rollback of r{target.number} to r{previous.number}"
    if SharingPolicy.objects.filter(pool=rollout.pool).exists():
        # The one maker of revisions: the next number, r{previous}'s bundle verbatim, audited there.
        back = publish_policy(pool_id=rollout.pool_id, actor=actor, note=note, rollback_of=previous.number)
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
            created_by=actor,
        )
    record_event(
        actor=actor,
        action="policy_revision.rollback_created",
        obj=back,
        after={"number": back.number, "bundle_of": previous.number, "replaces": target.number},
    )
    # The rollout being replaced leaves the running states first: one active rollout per pool.
    if can(rollout.state, RolloutEvent.ABORT):
        rollout.state = transition(rollout.state, RolloutEvent.ABORT)
        rollout.finished_at = timezone.now()
    rollout.save(update_fields=["state", "finished_at"])
    rollback = Rollout.objects.create(
        pool=rollout.pool,
        revision=back,
        from_revision=target,
        kind=OperationKind.ROLLBACK,
        max_unavailable=rollout.max_unavailable,
        approve_drain=rollout.approve_drain,
        created_by=actor,
    )
    rollout.rolled_back_by = rollback
    rollout.save(update_fields=["rolled_back_by"])
    record_event(
        actor=actor,
        action="rollout.started",
        obj=rollback,
        after={"revision": back.number, "kind": "rollback", "from_revision": target.number},
    )
    rollback.waves_started = 1
    rollback.save(update_fields=["waves_started"])
    for row in sorted(
        (r for r in rows if r.rollout_id == rollout.pk),
        key=lambda r: (r.state != NodeState.FAILED, r.node.name),
    ):
        _assign(row, rollback, step)
    queue_advance(rollback.pk)
    return rollback
