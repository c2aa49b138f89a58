"""A cluster the control plane syncs from, its per-kind sync state and its parse-issue counters."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from inventory.scoping import PlatformOnlyQuerySet
from tenants.models import dns_label

DEFAULT_POOL_LABEL = "nvidia.com/gpu.product"


SYNC_HEARTBEAT_PREFIX = "inventory.sync:"


def sync_heartbeat_name(cluster_id: object, kind: str = "") -> str:
    """The heartbeat of one kind of a cluster's sync (gpuplatform/health); with no kind, the prefix
    of all of the cluster's."""
    return f"{SYNC_HEARTBEAT_PREFIX}{cluster_id}:{kind}"


class SyncKind(models.TextChoices):
    # Listed in the order a cold sync walks them: units before the holders that point at them.
    DEVICE_CLASSES = "deviceclasses", "DeviceClasses"
    NODES = "nodes", "Nodes"
    RESOURCE_SLICES = "resourceslices", "ResourceSlices"
    # KEP-5055 rules that taint devices of the slices above (resource.k8s.io/v1 from 1.37; a server
    # that does not serve them answers 404 and the kind is read as empty).
    DEVICE_TAINT_RULES = "devicetaintrules", "DeviceTaintRules"
    RESOURCE_CLAIMS = "resourceclaims", "ResourceClaims"
    PODS = "pods", "Pods"
    # Kueue's Workloads, synced only from clusters that enforce through Kueue.
    WORKLOADS = "workloads", "Workloads"


class EnforcementBackend(models.TextChoices):
    """How the cluster is made to hold tenants to what they were granted (DESIGN §5.3); quotas fills
    each one behind its enforcement port (quotas/enforcement/)."""

    RESOURCEQUOTA = "resourcequota", "ResourceQuota per tenant namespace"
    KUEUE = "kueue", "Kueue (quota tree compiled into its objects)"


class Cluster(models.Model):
    """A Kubernetes cluster: where to reach it (kubeconfig encrypted at rest, or in-cluster), which
    node label groups nodes into pools, and which enforcement backend holds tenants to their grants."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=63, unique=True, validators=[dns_label])
    api_endpoint = models.CharField(max_length=500, blank=True)
    kubeconfig_encrypted = models.TextField(blank=True, editable=False)
    in_cluster = models.BooleanField(default=False)
    pool_label = models.CharField(max_length=253, default=DEFAULT_POOL_LABEL)
    enforcement_backend = models.CharField(
        max_length=16, choices=EnforcementBackend.choices, default=EnforcementBackend.RESOURCEQUOTA
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    # Full resync: when it last ran and how many rows it had to repair (0 = the watch kept up).
    last_full_resync_at = models.DateTimeField(null=True, blank=True)
    last_drift = models.IntegerField(default=0)
    total_drift = models.BigIntegerField(default=0)
    # A lease so that one worker syncs a cluster at a time (claimed by conditional UPDATE).
    lease_owner = models.CharField(max_length=64, blank=True, editable=False)
    lease_until = models.DateTimeField(null=True, blank=True, editable=False)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class SyncState(models.Model):
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="sync_states")
    kind = models.CharField(max_length=32, choices=SyncKind.choices)
    resource_version = models.CharField(max_length=64, blank=True)
    last_list_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_event_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)
    lag_seconds = models.FloatField(null=True, blank=True)
    relists = models.IntegerField(default=0)
    events = models.BigIntegerField(default=0)
    objects_seen = models.IntegerField(default=0)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["cluster", "kind"]
        constraints = [models.UniqueConstraint(fields=["cluster", "kind"], name="sync_state_once_per_kind")]

    def __str__(self) -> str:
        return f"{self.cluster_id}:{self.kind}"

    @property
    def healthy(self) -> bool:
        return self.last_success_at is not None and (
            self.last_error_at is None or self.last_error_at < self.last_success_at
        )


class ParseIssueCount(models.Model):
    """How often a parse issue code was met on a cluster: bad objects are counted, never fatal."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="parse_issues")
    kind = models.CharField(max_length=32, choices=SyncKind.choices)
    code = models.CharField(max_length=100)
    severity = models.CharField(max_length=16, default="error")
    count = models.BigIntegerField(default=0)
    last_object = models.CharField(max_length=300, blank=True)
    last_message = models.TextField(blank=True)
    last_seen_at = models.DateTimeField(default=timezone.now)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["cluster", "kind", "code"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "kind", "code"], name="parse_issue_once_per_code")
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.code} x{self.count}"


class KueueApplyState(models.Model):
    """What the last apply of the compiled Kueue objects did to a cluster (quotas/kueue_apply/),
    shown on the cluster page. ``backend_applied`` is the backend whose objects gpuplatform last
    left on the cluster, so a switch knows what to remove (ResourceQuotas, or Kueue's objects)."""

    cluster = models.OneToOneField(
        Cluster, on_delete=models.CASCADE, primary_key=True, related_name="kueue_state"
    )
    backend_applied = models.CharField(max_length=16, blank=True)
    attempted_at = models.DateTimeField(null=True, blank=True)
    applied_at = models.DateTimeField(null=True, blank=True)
    applied = models.JSONField(default=list)  # "Kind/name" (LocalQueues "LocalQueue/ns/name")
    removed = models.JSONField(default=list)
    # The compiler refused the catalogue (every reason): nothing of that attempt was applied.
    problems = models.JSONField(default=list)
    notes = models.JSONField(default=list)
    # The cluster refused or could not be reached; the next run retries.
    error = models.TextField(blank=True)
    # Fields of ours found changed by hand on the last apply, and put back by it:
    # [{"object": "ClusterQueue/vision", "fields": [{"path", "live", "wanted"}]}]
    drift = models.JSONField(default=list)
    drift_repaired_at = models.DateTimeField(null=True, blank=True)
    # What the last apply sent, by "Kind/name": a live field that still holds it was ours, not a hand
    # edit, when the catalogue (or a capacity request's raise) has changed what we want since.
    applied_objects = models.JSONField(default=dict)

    objects = PlatformOnlyQuerySet.as_manager()

    def __str__(self) -> str:
        return f"kueue apply state of {self.cluster_id}"

    @property
    def healthy(self) -> bool:
        return not self.problems and not self.error
