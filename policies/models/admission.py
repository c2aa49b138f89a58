"""What a tenant's pods may ask for on a pool, enforced by the cluster itself (issue 12 item 4).

A rule per tenant and pool: which flavors (empty = any flavor of the pool), the most GPUs one pod
may request, and which priority classes (empty = any). Pools reserved to a tenant are the pools'
own dedication (``NodePool.tenant``): pods of every other tenant are refused there. The compiler
turns rules into a ValidatingAdmissionPolicy, its bindings and per-pool ResourceQuota names.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from inventory.scoping import PlatformOnlyQuerySet
from tenants.scoping import TenantOwnedQuerySet


class AdmissionRule(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.PROTECT, related_name="admission_rules")
    pool = models.ForeignKey("inventory.NodePool", on_delete=models.PROTECT, related_name="admission_rules")
    allowed_flavors = models.ManyToManyField("quotas.Flavor", blank=True, related_name="+")
    max_per_pod = models.PositiveIntegerField(null=True, blank=True)
    allowed_priority_classes = models.ManyToManyField("quotas.PriorityClass", blank=True, related_name="+")
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = TenantOwnedQuerySet["AdmissionRule"].as_manager()

    class Meta:
        ordering = ["tenant__path", "pool__name"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "pool"],
                name="admission_rule_once_per_tenant_pool",
                violation_error_code="policy.admission_rule_exists",
            )
        ]

    def __str__(self) -> str:
        return f"{self.tenant_id} on {self.pool_id}"


class ApplyState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class AdmissionApply(models.Model):
    """One request to make a cluster's admission policies match the rules: asked for by a
    platform-admin (the web process, which holds no cluster credential), run by a Celery worker
    (which holds the service account RBAC grants the admission-policy writes), polled by the caller.
    A platform object: it names every tenant's policies on the cluster."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.CASCADE, related_name="+")
    state = models.CharField(max_length=8, choices=ApplyState.choices, default=ApplyState.QUEUED)
    applied = models.JSONField(default=list, blank=True)  # "Kind/name" applied
    removed = models.JSONField(default=list, blank=True)  # "Kind/name" of ours pruned
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = PlatformOnlyQuerySet["AdmissionApply"].as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["cluster", "state"], name="admission_apply_cluster_state")]

    def __str__(self) -> str:
        return f"admission apply {self.cluster_id} {self.state}"

    @property
    def finished(self) -> bool:
        return self.state in (ApplyState.DONE, ApplyState.FAILED)
