"""Celery tasks of the rollout driver: by id, idempotent, stable names."""

from __future__ import annotations

import uuid

from celery import shared_task
from django.conf import settings
from django.urls import reverse

from gpuplatform.health.heartbeats import beat
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
    beat(
        "policies.rollout_driver",
        label="Rollout driver",
        every_seconds=settings.ROLLOUT_ADVANCE_SECONDS,
        url=reverse("policy-rollouts"),
    )
    return len(ids)


@shared_task(name="policies.mark_offline_nodes")
def mark_offline_nodes_task() -> int:
    marked = delivery.mark_offline_nodes()
    beat(
        "policies.offline_agents",
        label="Silent-agent check",
        every_seconds=settings.OFFLINE_AGENTS_SECONDS,
        url=reverse("policies"),
    )
    return marked


@shared_task(name=APPLY_TASK)
def apply_admission_task(apply_id: str) -> str:
    """Make a cluster's admission policies match the rules: in the worker, whose service account
    holds the admission-policy writes (the web process holds no cluster credential). Safe twice."""
    return run_admission_apply(apply_id=uuid.UUID(apply_id)).state
