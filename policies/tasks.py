"""Celery tasks of the rollout driver: by id, idempotent, stable names."""

from __future__ import annotations

import uuid

from celery import shared_task

from policies.models import Rollout, RolloutState
from policies.services import delivery, rollouts
from policies.services.admission import APPLY_TASK, run_admission_apply


@shared_task(name="policies.advance_rollout")
def advance_rollout_task(rollout_id: str) -> str | None:
    rollout = rollouts.advance_rollout(rollout_id=uuid.UUID(rollout_id))
    return rollout.state if rollout else None


@shared_task(name="policies.advance_running_rollouts")
def advance_running_rollouts_task() -> int:
    """Periodic: retries whose backoff elapsed, blocked nodes that drained, verification of MIG changes."""
    ids = list(Rollout.objects.filter(state=RolloutState.RUNNING).values_list("pk", flat=True))
    for rollout_id in ids:
        advance_rollout_task.delay(str(rollout_id))
    return len(ids)


@shared_task(name="policies.mark_offline_nodes")
def mark_offline_nodes_task() -> int:
    return delivery.mark_offline_nodes()


@shared_task(name=APPLY_TASK)
def apply_admission_task(apply_id: str) -> str:
    """Make a cluster's admission policies match the rules: in the worker, whose service account
    holds the admission-policy writes (the web process holds no cluster credential). Safe twice."""
    return run_admission_apply(apply_id=uuid.UUID(apply_id)).state
