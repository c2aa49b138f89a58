"""ResourceClaims and the allocation ledger: who held which unit, from when to when (DESIGN §5.1)."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from inventory.models.fleet import GE_DIGITS, GE_PLACES
from inventory.scoping import AllocationQuerySet, PlatformOnlyQuerySet, TenantHeldQuerySet


class HolderKind(models.TextChoices):
    POD = "Pod", "Pod"
    CLAIM = "ResourceClaim", "ResourceClaim"


class ResourceClaim(models.Model):
    """A ResourceClaim as last seen; one that vanished stays with present=False."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.CASCADE, related_name="claims")
    tenant = models.ForeignKey(
        "tenants.Tenant", on_delete=models.SET_NULL, null=True, blank=True, related_name="claims"
    )
    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    uid = models.CharField(max_length=64)
    state = models.CharField(max_length=40, blank=True)
    requests = models.JSONField(default=list)
    results = models.JSONField(default=list)
    reserved_for = models.JSONField(default=list)
    node_name = models.CharField(max_length=253, blank=True)
    deleting = models.BooleanField(default=False)
    # What the sync found wrong with the claim now, each {severity, code, message, source}: capacity
    # outside a device's request policy (KEP-5075), asked while pending or consumed once allocated, and
    # results on a device of no current slice generation. Kept so a resync that finds the same again
    # counts nothing; [] once nothing is wrong or the claim is gone.
    issues = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(null=True, blank=True)
    present = models.BooleanField(default=True)
    gone_at = models.DateTimeField(null=True, blank=True)
    content_hash = models.CharField(max_length=64, blank=True, editable=False)

    objects = TenantHeldQuerySet.as_manager()

    class Meta:
        ordering = ["namespace", "name"]
        constraints = [models.UniqueConstraint(fields=["cluster", "uid"], name="claim_uid_per_cluster")]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class Allocation(models.Model):
    """One interval during which a holder (pod or claim) held a unit. Metering bills from this.

    ``tenant`` NULL is the explicit "unassigned" bucket (a namespace no tenant owns). ``unit_key``
    names what is held: the extended resource for device-plugin pods (which card is not reported),
    ``hami/<gpu uuid>`` for a HAMi share, ``dra/<driver>/<pool>/<device>`` for a DRA device.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.PROTECT, related_name="allocations")
    tenant = models.ForeignKey(
        "tenants.Tenant", on_delete=models.PROTECT, null=True, blank=True, related_name="allocations"
    )
    namespace = models.CharField(max_length=63)
    holder_kind = models.CharField(max_length=16, choices=HolderKind.choices)
    holder_name = models.CharField(max_length=253)
    holder_uid = models.CharField(max_length=64)
    unit_key = models.CharField(max_length=600)
    resource_name = models.CharField(max_length=253)  # the flavor placeholder until flavors exist
    count = models.PositiveIntegerField(default=1)
    ge = models.DecimalField(max_digits=GE_DIGITS, decimal_places=GE_PLACES)
    model_key = models.CharField(max_length=100, blank=True)
    details = models.JSONField(default=dict, blank=True)
    node_name = models.CharField(max_length=253, blank=True)
    node = models.ForeignKey(
        "inventory.Node", on_delete=models.SET_NULL, null=True, blank=True, related_name="allocations"
    )
    pool = models.ForeignKey(
        "inventory.NodePool", on_delete=models.SET_NULL, null=True, blank=True, related_name="allocations"
    )
    gpu = models.ForeignKey(
        "inventory.Gpu", on_delete=models.SET_NULL, null=True, blank=True, related_name="allocations"
    )
    unit = models.ForeignKey(
        "inventory.ShareableUnit",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="allocations",
    )
    claim = models.ForeignKey(
        ResourceClaim, on_delete=models.SET_NULL, null=True, blank=True, related_name="allocations"
    )
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    end_reason = models.CharField(max_length=32, blank=True)
    recorded_at = models.DateTimeField(default=timezone.now)

    objects = AllocationQuerySet.as_manager()

    class Meta:
        ordering = ["-started_at", "id"]
        constraints = [
            # The ledger's core promise: a holder holds a unit through at most one open interval.
            models.UniqueConstraint(
                fields=["cluster", "holder_uid", "unit_key"],
                condition=models.Q(ended_at__isnull=True),
                name="allocation_one_open_interval",
                violation_error_message="This holder already has an open allocation of this unit.",
            ),
            models.CheckConstraint(
                condition=models.Q(ended_at__isnull=True) | models.Q(ended_at__gte=models.F("started_at")),
                name="allocation_ends_after_start",
                violation_error_message="An allocation cannot end before it starts.",
            ),
            models.CheckConstraint(condition=models.Q(ge__gte=0), name="allocation_ge_not_negative"),
        ]
        indexes = [
            models.Index(fields=["cluster", "holder_uid"]),
            models.Index(fields=["tenant", "started_at"]),
            models.Index(fields=["cluster", "ended_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.holder_kind} {self.namespace}/{self.holder_name} {self.unit_key}"

    @property
    def binding(self) -> str:
        """Its claim's binding conditions for this device in words (KEP-5007; stored by the claim sync),
        or "". Read with select_related("claim"): a page of rows must not read a claim each."""
        if self.claim_id is None or self.claim is None:
            return ""
        for result in self.claim.results or []:
            key = f"dra/{result.get('driver')}/{result.get('pool')}/{result.get('device')}"
            if key == self.unit_key:
                return str(result.get("binding") or "")
        return ""


class ChangedHours(models.Model):
    """Hours already over whose allocations changed after the fact: the sync learnt of a holding that
    started, or ended, before the current hour began. Metering (above the inventory) reads these and
    meters again the hours it had metered; the inventory only says which hours moved, from
    ``first_hour`` up to (not including) ``end_hour``."""

    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.CASCADE, related_name="+")
    first_hour = models.DateTimeField()
    end_hour = models.DateTimeField()
    recorded_at = models.DateTimeField(default=timezone.now)
    done_at = models.DateTimeField(null=True, blank=True)  # set by whoever metered the hours again

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(end_hour__gt=models.F("first_hour")), name="changed_hours_not_empty"
            )
        ]
        indexes = [models.Index(fields=["done_at", "id"])]

    def __str__(self) -> str:
        return f"{self.cluster_id} {self.first_hour:%Y-%m-%dT%H}..{self.end_hour:%Y-%m-%dT%H}"
