"""The hourly usage ledger (DESIGN §5.5), keyed (share, meter, hour), and the capacity beside it.

A share is one allocation of the inventory's ledger (``share_key`` = its id) or, for usage no
allocation explains, ``unattributed/<card or pod>``: kept, never dropped. Every row belongs to the
billing period holding its hour; rows of a closed period cannot change (a PostgreSQL trigger,
metering/migrations/0002).
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from inventory.models.fleet import GE_DIGITS, GE_PLACES
from inventory.scoping import PlatformOnlyQuerySet
from metering.scoping import SubtreeUsageQuerySet

QTY_DIGITS = 24
QTY_PLACES = 9  # a report line's quantities, rounded once per line: a second of 1/7 GE is 3.97e-5
# The hourly ledger's quantities: 18 places, so an hour's share (1/7 GE is 0.142857142857142857)
# is off by under 5e-19 and a month of them by under 4e-16 card-hours: exact to the cent, the one
# rounding left being the line's (issue 32: card-hours were rounded hourly to nine places).
LEDGER_DIGITS = 36
LEDGER_PLACES = 18


class Meter(models.TextChoices):
    ALLOCATED_GE_HOURS = "allocated_ge_hours", "GE-hours allocated"
    USED_GE_HOURS = "used_ge_hours", "GE-hours used"
    MEMORY_GIB_HOURS = "memory_gib_hours", "GPU memory GiB-hours"
    ENERGY_KWH = "energy_kwh", "Energy kWh"


class Attribution(models.TextChoices):
    ALLOCATION = "allocation", "From the allocation ledger"
    SHARE = "share", "Reported per share by the data plane"
    SPLIT_BY_ALLOCATION = "split_by_allocation", "Card usage split by allocation"
    UNATTRIBUTED = "unattributed", "No allocation explains it"


class UsageHour(models.Model):
    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.PROTECT, related_name="+")
    period = models.ForeignKey("metering.BillingPeriod", on_delete=models.PROTECT, related_name="usage")
    hour = models.DateTimeField()  # the hour's start, UTC
    share_key = models.CharField(max_length=600)
    meter = models.CharField(max_length=32, choices=Meter.choices)
    allocation = models.ForeignKey(
        "inventory.Allocation", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    tenant = models.ForeignKey(
        "tenants.Tenant", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    namespace = models.CharField(max_length=63, blank=True)
    pool = models.ForeignKey(
        "inventory.NodePool", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    pool_name = models.CharField(max_length=253, blank=True)
    node_name = models.CharField(max_length=253, blank=True)
    card_key = models.CharField(max_length=200, blank=True)  # the card it sat on, when known
    gpu_model = models.CharField(max_length=100, blank=True)
    flavor_name = models.CharField(max_length=63, blank=True)
    resource_name = models.CharField(max_length=253, blank=True)
    # GE held while it held, as the inventory stores it (exact when read back with ge_from_decimal)
    ge = models.DecimalField(max_digits=GE_DIGITS, decimal_places=GE_PLACES, default=0)
    seconds = models.PositiveIntegerField(default=0)  # seconds of the hour it held (allocation basis)
    quantity = models.DecimalField(max_digits=LEDGER_DIGITS, decimal_places=LEDGER_PLACES)  # meter's unit
    # Physical card-hours charged by the card-hour rule (allocation basis); the chargeback prices these.
    card_hours = models.DecimalField(max_digits=LEDGER_DIGITS, decimal_places=LEDGER_PLACES, default=0)
    attribution = models.CharField(max_length=24, choices=Attribution.choices)
    source = models.CharField(max_length=16)  # ledger, prometheus, simulated
    samples_seen = models.PositiveIntegerField(default=0)
    samples_expected = models.PositiveIntegerField(default=0)
    complete = models.BooleanField(default=True)  # False: a gap; retried, shown, never read as zero
    computed_at = models.DateTimeField(default=timezone.now)

    objects = SubtreeUsageQuerySet.as_manager()

    class Meta:
        ordering = ["hour", "share_key", "meter"]
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "share_key", "meter", "hour"], name="usage_one_row_per_key"
            ),
            models.CheckConstraint(condition=models.Q(seconds__lte=3600), name="usage_seconds_within_hour"),
            models.CheckConstraint(
                condition=models.Q(samples_seen__lte=models.F("samples_expected"))
                | models.Q(samples_expected=0),
                name="usage_coverage_at_most_one",
            ),
        ]
        indexes = [
            models.Index(fields=["period", "meter", "pool"]),
            models.Index(fields=["tenant", "hour"]),
            models.Index(fields=["cluster", "hour"]),
        ]

    def __str__(self) -> str:
        return f"{self.share_key} {self.meter} {self.hour:%Y-%m-%dT%H}"

    @property
    def coverage(self) -> float | None:
        return None if not self.samples_expected else self.samples_seen / self.samples_expected


class CapacityHour(models.Model):
    """One node's physical card-hours in one hour, and what of them nobody held (idle)."""

    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.PROTECT, related_name="+")
    period = models.ForeignKey("metering.BillingPeriod", on_delete=models.PROTECT, related_name="capacity")
    hour = models.DateTimeField()
    node_name = models.CharField(max_length=253)
    pool = models.ForeignKey(
        "inventory.NodePool", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    pool_name = models.CharField(max_length=253, blank=True)
    gpu_model = models.CharField(max_length=100, blank=True)
    cards = models.PositiveIntegerField()
    card_hours = models.DecimalField(max_digits=LEDGER_DIGITS, decimal_places=LEDGER_PLACES)
    idle_card_hours = models.DecimalField(max_digits=LEDGER_DIGITS, decimal_places=LEDGER_PLACES)
    computed_at = models.DateTimeField(default=timezone.now)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["hour", "node_name"]
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "node_name", "hour"], name="capacity_one_row_per_node_hour"
            ),
            models.CheckConstraint(
                condition=models.Q(idle_card_hours__gte=0), name="capacity_idle_not_negative"
            ),
        ]
        indexes = [models.Index(fields=["period", "pool"])]

    def __str__(self) -> str:
        return f"{self.node_name} {self.hour:%Y-%m-%dT%H}"


class MeteredHour(models.Model):
    """What was metered for a cluster-hour from one source: the row a worker locks while it meters,
    so two workers never write the same hour, and the coverage the UI shows."""

    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.CASCADE, related_name="+")
    hour = models.DateTimeField()
    source = models.CharField(max_length=16)
    rows = models.PositiveIntegerField(default=0)
    complete = models.BooleanField(default=False)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    computed_at = models.DateTimeField(null=True, blank=True)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["-hour"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "hour", "source"], name="metered_hour_per_source")
        ]

    def __str__(self) -> str:
        return f"{self.cluster_id} {self.hour:%Y-%m-%dT%H} {self.source}"
