"""Kueue Workloads as synced from a ``kueue`` cluster (inventory/sync/workloads.py): who queued
what, in which ClusterQueue, on which flavors, and where Kueue stands with it."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from tenants.scoping import TenantOwnedQuerySet


class WorkloadState(models.TextChoices):
    PENDING = "pending", "Pending"
    QUOTA_RESERVED = "quota_reserved", "Quota reserved"
    ADMITTED = "admitted", "Admitted"
    EVICTED = "evicted", "Evicted"
    FINISHED = "finished", "Finished"


class Workload(models.Model):
    """A Kueue Workload. ``tenant`` is the owner of its namespace when the LocalQueue it names is
    one gpuplatform wrote there; otherwise NULL (unattributed: Kueue may still admit it through a
    LocalQueue someone else made, and only platform staff see it). A Workload deleted from the
    cluster keeps its row (``present`` False, ``gone_at``): what Kueue said last about it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.CASCADE, related_name="workloads")
    uid = models.CharField(max_length=64)
    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    tenant = models.ForeignKey(
        "tenants.Tenant", on_delete=models.SET_NULL, null=True, blank=True, related_name="workloads"
    )
    queue_name = models.CharField(max_length=253, blank=True)
    cluster_queue = models.CharField(max_length=253, blank=True)
    priority_class = models.CharField(max_length=253, blank=True)
    priority = models.IntegerField(null=True, blank=True)
    max_execution_seconds = models.PositiveIntegerField(null=True, blank=True)
    active = models.BooleanField(default=True)
    pod_sets = models.JSONField(default=list)  # [{"name", "count", "requests": {resource: quantity}}]
    flavors = models.JSONField(default=dict)  # {pod set: {resource: flavor}} once quota is reserved
    state = models.CharField(max_length=16, choices=WorkloadState.choices, default=WorkloadState.PENDING)
    reason = models.CharField(max_length=200, blank=True)  # Kueue's, of the deciding condition
    message = models.TextField(blank=True)  # Kueue's
    explanation = models.TextField(blank=True)  # ours, in plain words
    conditions = models.JSONField(default=list)
    admission_checks = models.JSONField(default=list)
    created_in_cluster = models.DateTimeField(null=True, blank=True)
    present = models.BooleanField(default=True)
    gone_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = TenantOwnedQuerySet["Workload"].as_manager()

    class Meta:
        ordering = ["-created_in_cluster", "namespace", "name"]
        constraints = [models.UniqueConstraint(fields=["cluster", "uid"], name="workload_once_per_cluster")]
        indexes = [models.Index(fields=["tenant", "state"])]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def attributed(self) -> bool:
        return self.tenant_id is not None
