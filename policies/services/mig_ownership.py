"""Who owns MIG on a pool's nodes: where the NVIDIA DRA driver does (DynamicMIG, ``Node.driver_managed_mig``)
no bundle that drives mig-parted reaches them. A rollout is refused at its start
(``refuse_driver_managed_mig``) and, when the driver takes the nodes over while one runs, stopped by
the driver's next pass (``stop_if_driver_managed``): the agents would otherwise go on applying the
geometry it holds beside a driver that makes MIG partitions per claim (docs/policies.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from django.utils import timezone

from gpuplatform.accounts.models import User
from gpuplatform.audit.services import record_attempt, record_event
from gpuplatform.errors import Conflict
from inventory.models import Node
from policies.compiler import mig_management_parts
from policies.models import NodePolicyState, PolicyRevision, Rollout
from policies.rollout_states import RolloutEvent, transition
from policies.services.delivery import release_rollout_nodes


def _owned_by_the_driver(*, pool: str, number: int, nodes: Sequence[str], parts: list[str]) -> str:
    """Why r``number`` must not reach these nodes, in the words the refusal and the stop share."""
    where = ", ".join(nodes[:3]) + (" and more" if len(nodes) > 3 else "")
    return (
        f"the NVIDIA DRA driver manages MIG on {pool}'s nodes ({where}) with DynamicMIG, creating MIG "
        f"partitions per claim, and mig-parted must not run beside it; r{number} would push "
        f"{', '.join(parts)}. Declare mode dra and publish a new revision."
    )


def refuse_driver_managed_mig(*, actor: User, pool_id: uuid.UUID, revision_id: uuid.UUID) -> None:
    """No bundle that drives mig-parted starts rolling out on a pool whose MIG the NVIDIA DRA driver
    owns: 409 ``rollout.driver_managed_mig``. Checked before the rollout's transaction, so the refusal
    is audited (``rollout.refused``); an unknown pool or revision is left to the lookups that follow."""
    revision = PolicyRevision.objects.filter(pk=revision_id, pool_id=pool_id).select_related("pool").first()
    if revision is None:
        return
    parts = mig_management_parts(revision.bundle or {})
    if not parts:
        return
    managed = list(
        Node.objects.filter(pool_id=pool_id, present=True, driver_managed_mig=True)
        .order_by("name")
        .values_list("name", flat=True)[:4]
    )
    if not managed:
        return
    why = _owned_by_the_driver(pool=revision.pool.name, number=revision.number, nodes=managed, parts=parts)
    refused = Conflict(
        f"Revision r{revision.number} is not rolled out on {revision.pool.name}: {why}",
        code="rollout.driver_managed_mig",
    )
    record_attempt(
        actor=actor,
        action="rollout.refused",
        object_type="policies.rollout",
        object_repr=f"pool {revision.pool.name} r{revision.number}",
        detail={"pool": str(pool_id), "revision": revision.number, "code": refused.code, "pushes": parts},
    )
    raise refused


def stop_if_driver_managed(*, rollout: Rollout, rows: list[NodePolicyState]) -> list[NodePolicyState] | None:
    """Stop a running rollout whose revision drives mig-parted when any present node of its pool is
    now driver-managed MIG: as an abort (nodes that applied it keep it, the others stay on what they
    run, so its bundle is handed out no more), with the reason as its message, audited
    ``rollout.stopped`` in the caller's transaction. The caller holds the rollout's and the pool's node
    rows' locks (``rows``, with their nodes) and uncordons after commit the rows returned; ``None``
    when the rollout may go on."""
    parts = mig_management_parts(rollout.revision.bundle or {})
    managed = [r.node.name for r in rows if r.node.driver_managed_mig]
    if not (parts and managed):
        return None
    before = rollout.state
    rollout.state = transition(rollout.state, RolloutEvent.STOP_DRIVER_MANAGED)
    kept, stopped, uncordon = release_rollout_nodes(rollout=rollout, rows=rows, why="stopped")
    number = rollout.revision.number
    why = _owned_by_the_driver(pool=rollout.pool.name, number=number, nodes=managed, parts=parts)
    rollout.finished_at = timezone.now()
    rollout.message = f"Stopped: {why} {kept} node(s) keep r{number}, {stopped} stay on what they ran."
    rollout.save(update_fields=["state", "finished_at", "message"])
    record_event(
        actor=None,
        action="rollout.stopped",
        obj=rollout,
        before={"state": before},
        after={
            "state": rollout.state,
            "code": "rollout.driver_managed_mig",
            "nodes": managed,
            "pushes": parts,
            "kept": kept,
            "stopped": stopped,
            "message": rollout.message,
        },
    )
    return uncordon
