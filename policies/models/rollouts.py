"""Rollouts of a revision over a pool, and each node's delivery state (policies/node_states.py)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from inventory.scoping import PlatformOnlyQuerySet
from policies.node_states import NodeState


class RolloutState(models.TextChoices):
    RUNNING = "running", "running"
    # Held by a platform-admin: no new node is started; nodes already given the revision finish.
    PAUSED = "paused", "paused"
    SUCCEEDED = "succeeded", "succeeded"
    FAILED = "failed", "failed (rolled back)"
    CANCELLED = "cancelled", "aborted"


# A rollout in one of these still holds its pool: no other may start there.
ACTIVE_STATES = (RolloutState.RUNNING, RolloutState.PAUSED)


class OperationKind(models.TextChoices):
    APPLY = "apply", "apply"
    ROLLBACK = "rollback", "rollback"


class Rollout(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    pool = models.ForeignKey("inventory.NodePool", on_delete=models.CASCADE, related_name="rollouts")
    revision = models.ForeignKey("policies.PolicyRevision", on_delete=models.PROTECT, related_name="rollouts")
    # What the nodes ran before: the bundle a failure rolls back to.
    from_revision = models.ForeignKey(
        "policies.PolicyRevision", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    kind = models.CharField(max_length=16, choices=OperationKind.choices, default=OperationKind.APPLY)
    state = models.CharField(max_length=16, choices=RolloutState.choices, default=RolloutState.RUNNING)
    max_unavailable = models.PositiveIntegerField(default=1)
    # Explicit approval to cordon nodes and evict their GPU pods for a planned MIG change.
    approve_drain = models.BooleanField(default=False)
    waves_started = models.PositiveIntegerField(default=0)
    rolled_back_by = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    message = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["pool"],
                condition=models.Q(state__in=["running", "paused"]),
                name="one_active_rollout_per_pool",
                violation_error_message="A rollout is already running (or paused) on this pool.",
            )
        ]

    def __str__(self) -> str:
        return f"rollout of r{self.revision.number} on {self.pool}" if self.revision_id else "rollout"


class NodePolicyState(models.Model):
    """What a node should run, what it reports running, and where its delivery stands."""

    node = models.OneToOneField("inventory.Node", on_delete=models.CASCADE, related_name="policy_state")
    desired_revision = models.ForeignKey(
        "policies.PolicyRevision", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    desired_operation = models.CharField(
        max_length=16, choices=OperationKind.choices, default=OperationKind.APPLY
    )
    rollout = models.ForeignKey(
        Rollout, on_delete=models.SET_NULL, null=True, blank=True, related_name="nodes"
    )
    wave = models.PositiveIntegerField(null=True, blank=True)
    state = models.CharField(
        max_length=16, choices=[(s.value, s.value) for s in NodeState], default=NodeState.PENDING
    )
    applied_revision = models.PositiveIntegerField(null=True, blank=True)
    applied_hash = models.CharField(max_length=80, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_code = models.CharField(max_length=100, blank=True)
    last_message = models.TextField(blank=True)
    # The agent's NVML report: [{index, uuid, name, memory_mib, mig_mode, mig_devices: [...]}].
    gpus = models.JSONField(default=list, blank=True)
    last_heartbeat_at = models.DateTimeField(null=True, blank=True)
    # Set when the rollout cordoned the node for a planned MIG change, so only it uncordons.
    cordoned_by_rollout = models.BooleanField(default=False)
    verified = models.BooleanField(default=False)
    state_changed_at = models.DateTimeField(default=timezone.now)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["node__name"]

    def __str__(self) -> str:
        return f"{self.node_id}: {self.state}"
