"""What gpuplatform's AdmissionCheck decided for one Kueue Workload, and the GE-hours it reserves.

One row per Workload (keyed by the Workload row, itself unique per cluster and Kubernetes uid), so
deciding again never reserves twice: a new decision replaces the row's reservation. The reservation
counts against every budget above the tenant, as an admitted request does (quotas/runner/inputs.py):
GE x the hours left until ``reserved_until`` (past burn is metering's), until ``released_at``.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal
from fractions import Fraction

from django.conf import settings
from django.db import models
from django.utils import timezone

from tenants.scoping import TenantOwnedQuerySet


class CheckVerdict(models.TextChoices):
    PENDING = "Pending", "Pending"
    READY = "Ready", "Ready"
    RETRY = "Retry", "Retry"
    REJECTED = "Rejected", "Rejected"


class WorkloadApproval(models.TextChoices):
    NOT_REQUIRED = "not-required", "Not required"
    AWAITING = "awaiting", "Awaiting"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"


class WorkloadCheck(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workload = models.OneToOneField(
        "inventory.Workload", on_delete=models.CASCADE, related_name="budget_check"
    )
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="workload_checks")
    verdict = models.CharField(max_length=16, choices=CheckVerdict.choices, default=CheckVerdict.PENDING)
    code = models.CharField(max_length=32, blank=True)  # why, for machines: see quotas/kueue/check.py
    message = models.TextField(blank=True)  # what the Workload's check says
    # The estimate: GE per flavor id (text decimals), the hours it runs for, GE-hours in all.
    ge_by_flavor = models.JSONField(default=dict)
    amounts = models.JSONField(default=dict)  # flavor name -> resource -> units, for the approver
    hours = models.DecimalField(max_digits=12, decimal_places=4, default=Decimal(0))
    ge_hours = models.DecimalField(max_digits=14, decimal_places=3, default=Decimal(0))
    approval = models.CharField(
        max_length=16, choices=WorkloadApproval.choices, default=WorkloadApproval.NOT_REQUIRED
    )
    approval_basis = models.JSONField(default=list)  # the thresholds crossed, as for requests
    approvers = models.CharField(max_length=300, blank=True)  # who may approve, in words
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    approval_note = models.TextField(blank=True)
    reserved_at = models.DateTimeField(null=True, blank=True)
    reserved_until = models.DateTimeField(null=True, blank=True)
    released_at = models.DateTimeField(null=True, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    patched_at = models.DateTimeField(null=True, blank=True)  # the cluster last told this verdict
    updated_at = models.DateTimeField(default=timezone.now)

    objects = TenantOwnedQuerySet["WorkloadCheck"].as_manager()

    class Meta:
        ordering = ["-decided_at"]
        indexes = [
            models.Index(fields=["tenant", "approval"]),
            models.Index(fields=["released_at", "reserved_at"]),
        ]

    def __str__(self) -> str:
        return f"budget check of workload {self.workload_id}"

    @property
    def holds_reservation(self) -> bool:
        return self.reserved_at is not None and self.released_at is None

    def ge_of(self) -> dict[uuid.UUID, Fraction]:
        return {uuid.UUID(k): Fraction(Decimal(v)) for k, v in (self.ge_by_flavor or {}).items()}

    def remaining_until(self, end: datetime) -> datetime | None:
        """Where the reservation stops counting, at most ``end`` (the month's end)."""
        if not self.holds_reservation or self.reserved_until is None:
            return None
        return min(self.reserved_until, end)
