"""Capacity requests and their timestamped, explained transitions."""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from quotas.models.catalogue import Flavor, PriorityClass, Queue
from tenants.scoping import TenantOwnedQuerySet


class RequestState(models.TextChoices):
    PENDING = "pending", "Pending"
    ADMITTED = "admitted", "Admitted"  # decided; cluster objects not applied yet
    ACTIVE = "active", "Active"  # materialised in the cluster
    RELEASED = "released", "Released"
    EXPIRED = "expired", "Expired"
    REJECTED = "rejected", "Rejected"
    CANCELLED = "cancelled", "Cancelled"
    PREEMPTED = "preempted", "Preempted"


HOLDING = (RequestState.ADMITTED, RequestState.ACTIVE)  # states that hold quota and capacity
FINAL = (
    RequestState.RELEASED,
    RequestState.EXPIRED,
    RequestState.REJECTED,
    RequestState.CANCELLED,
    RequestState.PREEMPTED,
)


class ApprovalState(models.TextChoices):
    NOT_REQUIRED = "not-required", "Not required"
    AWAITING = "awaiting", "Awaiting"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"


class CapacityRequest(models.Model):
    """A tenant's request for capacity of one flavor, and where it stands.

    ``reason_code``/``message`` always say why the request is in its state (a pending one: why it
    waits); positions are set while pending and admissible. ``created_order``/``admitted_order`` are
    microsecond stamps the admission engine orders by (FIFO, and latest-admitted preempted first).
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.PROTECT, related_name="capacity_requests")
    queue = models.ForeignKey(Queue, on_delete=models.PROTECT, related_name="requests")
    flavor = models.ForeignKey(Flavor, on_delete=models.PROTECT, related_name="requests")
    priority_class = models.ForeignKey(PriorityClass, on_delete=models.PROTECT, related_name="requests")
    amounts = models.JSONField()
    # Flavors to fall back to, in order, after `flavor` (ids as strings). Once admitted, `flavor` is
    # the one it was admitted on; `flavor_attempts` says what each named flavor answered last time.
    fallback_flavors = models.JSONField(default=list, blank=True)
    flavor_attempts = models.JSONField(default=list, blank=True)
    ge = models.DecimalField(max_digits=14, decimal_places=6, default=0)
    duration_seconds = models.PositiveIntegerField(null=True, blank=True)  # NULL: until released
    reason = models.CharField(max_length=500, blank=True)  # the requester's own words
    state = models.CharField(max_length=16, choices=RequestState.choices, default=RequestState.PENDING)
    reason_code = models.CharField(max_length=64, blank=True)
    message = models.TextField(blank=True)
    queue_position = models.PositiveIntegerField(null=True, blank=True)
    cohort_position = models.PositiveIntegerField(null=True, blank=True)
    borrowed = models.JSONField(default=list, blank=True)
    warnings = models.JSONField(default=list, blank=True)
    approval = models.CharField(
        max_length=16, choices=ApprovalState.choices, default=ApprovalState.NOT_REQUIRED
    )
    # Why it awaits approval, from the figures the engine judged under the cohort lock: per flavor
    # whose threshold it crossed, the threshold, the resource and what the governing subtree would hold.
    approval_basis = models.JSONField(default=list, blank=True)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    preempted_by = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    cluster_objects = models.JSONField(default=list, blank=True)  # what materialisation applied
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    idempotency_key = models.CharField(max_length=128, blank=True)
    body_hash = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    created_order = models.BigIntegerField(default=0)
    admitted_at = models.DateTimeField(null=True, blank=True)
    admitted_order = models.BigIntegerField(null=True, blank=True)
    active_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TenantOwnedQuerySet["CapacityRequest"].as_manager()

    class Meta:
        ordering = ["-created_at", "id"]
        indexes = [
            models.Index(fields=["flavor", "state"], name="request_flavor_state"),
            models.Index(fields=["tenant", "state"], name="request_tenant_state"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["created_by", "idempotency_key"],
                condition=~models.Q(idempotency_key=""),
                name="request_idempotency_key_per_user",
                violation_error_code="idempotency_key_reused",
            )
        ]

    def __str__(self) -> str:
        return f"request {self.pk}"

    @property
    def duration(self) -> timedelta | None:
        return None if self.duration_seconds is None else timedelta(seconds=self.duration_seconds)


class RequestTransition(models.Model):
    """One step of a request's life: from, to, when, why and who (NULL: the admission loop)."""

    request = models.ForeignKey(CapacityRequest, on_delete=models.CASCADE, related_name="transitions")
    from_state = models.CharField(max_length=16, blank=True)
    to_state = models.CharField(max_length=16)
    reason_code = models.CharField(max_length=64, blank=True)
    message = models.TextField(blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.from_state or '-'} -> {self.to_state}"


class FlavorHold(models.Model):
    """What admitted and active requests hold of each flavor's resources, kept by a PostgreSQL trigger
    on every insert, state change and delete of a request (migration 0002).

    Admission reads this one row per resource instead of summing every holding request of the fleet,
    and it is the row the physical claim serialises on. Written only by the trigger, so bulk writes
    and deletes that bypass the services cannot let it drift. SQLite (the demo) has no trigger and
    sums the requests instead (`quotas.runner.inputs.held_by_flavor`).
    """

    flavor = models.ForeignKey(
        Flavor, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )  # no constraint: the trigger may write while the flavor's deletion is in flight
    resource = models.CharField(max_length=253)
    held = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["flavor", "resource"], name="flavor_hold_unique")]

    def __str__(self) -> str:
        return f"{self.flavor_id} {self.resource}: {self.held}"
