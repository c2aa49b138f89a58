"""The capacity catalogue: flavors, quotas, budgets, priority classes and queues (issue #5).

Amounts are ints in the flavor resource's native unit; GE per unit is stored as an exact fraction
string ("1/7") because a seventh of a card has no finite decimal and quota sums must not drift.
"""

from __future__ import annotations

import uuid
from fractions import Fraction

from django.core.validators import MinValueValidator, RegexValidator
from django.db import models
from django.utils import timezone

from quotas.scoping import DedicatedQuerySet
from tenants.models.identity import dns_label
from tenants.scoping import TenantOwnedQuerySet

fraction_text = RegexValidator(r"^\d+(/\d*[1-9]\d*)?$", "A positive fraction such as 1, 1/7 or 3/8.")


class FlavorKind(models.TextChoices):
    DEVICE_PLUGIN = "device-plugin", "Device plugin (extended resource)"
    DRA = "dra", "DRA (ResourceClaim on a DeviceClass)"


class Flavor(models.Model):
    """A named kind of capacity: one node pool x GPU model x how pods ask for it.

    ``resources`` lists [{"name": "nvidia.com/gpu", "ge_per_unit": "1"}]; HAMi flavors list
    gpumem and gpucores. ``tenant`` set: dedicated to that subtree. A flavor whose pool vanished keeps
    its row with ``pool`` NULL and is flagged.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=63, unique=True, validators=[dns_label])
    display_name = models.CharField(max_length=200, blank=True)
    kind = models.CharField(max_length=16, choices=FlavorKind.choices, default=FlavorKind.DEVICE_PLUGIN)
    pool = models.ForeignKey(
        "inventory.NodePool", on_delete=models.SET_NULL, null=True, blank=True, related_name="flavors"
    )
    gpu_model = models.CharField(max_length=100, blank=True)
    resources = models.JSONField(default=list)
    device_class = models.CharField(max_length=253, blank=True)  # DRA flavors only
    # Requests above this amount wait for a tenant-admin's approval; 0 means every request does.
    approval_above = models.PositiveIntegerField(null=True, blank=True)
    tenant = models.ForeignKey(
        "tenants.Tenant", on_delete=models.PROTECT, null=True, blank=True, related_name="dedicated_flavors"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    objects = DedicatedQuerySet["Flavor"].as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def resource_names(self) -> list[str]:
        return [str(r["name"]) for r in self.resources]

    def ge_per_unit(self) -> dict[str, Fraction]:
        return {str(r["name"]): Fraction(str(r["ge_per_unit"])) for r in self.resources}

    def needs_approval(self, amounts: dict[str, int]) -> bool:
        return self.approval_above is not None and max(amounts.values(), default=0) > self.approval_above


class Quota(models.Model):
    """Kueue's per tenant x flavor x resource quota: nominal, borrowing limit, lending limit."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.PROTECT, related_name="quotas")
    flavor = models.ForeignKey(Flavor, on_delete=models.PROTECT, related_name="quotas")
    resource = models.CharField(max_length=253)
    nominal = models.PositiveIntegerField()
    borrowing_limit = models.PositiveIntegerField(null=True, blank=True)
    lending_limit = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TenantOwnedQuerySet["Quota"].as_manager()

    class Meta:
        ordering = ["tenant__path", "flavor__name", "resource"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "flavor", "resource"],
                name="quota_once_per_tenant_flavor_resource",
                violation_error_code="quota_exists",
            )
        ]

    def __str__(self) -> str:
        return f"{self.tenant_id}:{self.flavor_id}:{self.resource}"


class Budget(models.Model):
    """A monthly GE-hour budget of a tenant, for every flavor (flavor NULL) or one."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.PROTECT, related_name="budgets")
    flavor = models.ForeignKey(
        Flavor, on_delete=models.PROTECT, null=True, blank=True, related_name="budgets"
    )
    limit_ge_hours = models.DecimalField(max_digits=14, decimal_places=3, validators=[MinValueValidator(0)])
    hard = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TenantOwnedQuerySet["Budget"].as_manager()

    class Meta:
        ordering = ["tenant__path", "flavor__name"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "flavor"],
                name="budget_once_per_tenant_flavor",
                violation_error_code="budget_exists",
            ),
            models.UniqueConstraint(
                fields=["tenant"],
                condition=models.Q(flavor__isnull=True),
                name="budget_once_per_tenant_all_flavors",
                violation_error_code="budget_exists",
            ),
        ]

    def __str__(self) -> str:
        return f"budget {self.tenant_id}:{self.flavor_id or '*'}"


class PriorityClass(models.Model):
    """A priority: higher values go first and may preempt lower ones that are preemptible.
    ``tenant`` set: only that subtree may use it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=63, unique=True, validators=[dns_label])
    value = models.IntegerField()
    preemptible = models.BooleanField(default=True)
    description = models.CharField(max_length=300, blank=True)
    tenant = models.ForeignKey(
        "tenants.Tenant", on_delete=models.PROTECT, null=True, blank=True, related_name="priority_classes"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = DedicatedQuerySet["PriorityClass"].as_manager()

    class Meta:
        ordering = ["-value", "name"]

    def __str__(self) -> str:
        return self.name


class QueueingStrategy(models.TextChoices):
    STRICT_FIFO = "StrictFIFO", "StrictFIFO"
    BEST_EFFORT_FIFO = "BestEffortFIFO", "BestEffortFIFO"


class WithinTenantPreemption(models.TextChoices):
    """Kueue's withinClusterQueue values (Any is not one of them)."""

    NEVER = "Never", "Never"
    LOWER_PRIORITY = "LowerPriority", "LowerPriority"
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority", "LowerOrNewerEqualPriority"


class ReclaimWithinCohort(models.TextChoices):
    NEVER = "Never", "Never"
    LOWER_PRIORITY = "LowerPriority", "LowerPriority"
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority", "LowerOrNewerEqualPriority"
    ANY = "Any", "Any"


class BorrowWithinCohort(models.TextChoices):
    NEVER = "Never", "Never"
    LOWER_PRIORITY = "LowerPriority", "LowerPriority"


class Fungibility(models.TextChoices):
    MAY_STOP_SEARCH = "MayStopSearch", "MayStopSearch"
    TRY_NEXT_FLAVOR = "TryNextFlavor", "TryNextFlavor"


class Queue(models.Model):
    """A tenant's queue: its strategy orders its requests, its weight scales fair sharing, and its
    preemption and flavor-fungibility settings are Kueue's ClusterQueue `preemption` and
    `flavorFungibility` blocks for the requests it holds (docs/admission.md)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.PROTECT, related_name="queues")
    name = models.CharField(max_length=63, validators=[dns_label])
    strategy = models.CharField(
        max_length=16, choices=QueueingStrategy.choices, default=QueueingStrategy.BEST_EFFORT_FIFO
    )
    weight = models.DecimalField(max_digits=8, decimal_places=3, default=1, validators=[MinValueValidator(0)])
    within_tenant = models.CharField(
        max_length=32, choices=WithinTenantPreemption.choices, default=WithinTenantPreemption.LOWER_PRIORITY
    )
    reclaim_within_cohort = models.CharField(
        max_length=32, choices=ReclaimWithinCohort.choices, default=ReclaimWithinCohort.ANY
    )
    borrow_within_cohort = models.CharField(
        max_length=16, choices=BorrowWithinCohort.choices, default=BorrowWithinCohort.NEVER
    )
    # Only with borrow_within_cohort LowerPriority: relatives above this priority are not preempted
    # while the request borrows.
    max_priority_threshold = models.IntegerField(null=True, blank=True)
    when_can_borrow = models.CharField(
        max_length=16, choices=Fungibility.choices, default=Fungibility.MAY_STOP_SEARCH
    )
    when_can_preempt = models.CharField(
        max_length=16, choices=Fungibility.choices, default=Fungibility.TRY_NEXT_FLAVOR
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = TenantOwnedQuerySet["Queue"].as_manager()

    class Meta:
        ordering = ["tenant__path", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "name"],
                name="queue_name_per_tenant",
                violation_error_code="queue_name_taken",
            ),
            models.CheckConstraint(
                condition=models.Q(max_priority_threshold__isnull=True)
                | models.Q(borrow_within_cohort="LowerPriority"),
                name="queue_threshold_needs_borrow_within_cohort",
                violation_error_code="max_priority_threshold_without_borrowing",
            ),
        ]

    def __str__(self) -> str:
        return self.name
