"""Billing periods (months in BILLING_TIMEZONE), their chargeback lines, and adjustments.

open -> closing (the grace period: late data still lands in place) -> closed. A closed period's
usage, capacity, report lines and adjustments cannot be inserted, changed or deleted: a PostgreSQL
trigger refuses it (metering/migrations/0002), whatever the code does. Late data for a closed period
becomes Adjustment rows in the next open period, each naming the hour and share it corrects.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from inventory.scoping import PlatformOnlyQuerySet
from metering.models.usage import LEDGER_DIGITS, LEDGER_PLACES, QTY_DIGITS, QTY_PLACES
from metering.scoping import ReportLineQuerySet, TenantUsageQuerySet

MONEY_DIGITS = 24
MONEY_PLACES = 12  # the exact (unrounded) amounts; rounded ones use the currency's minor unit
# The meter an adjustment of a node's idle card-hours names (share key ``idle/<node>``): usage meters
# are metering.models.usage.Meter.
IDLE_METER = "idle_card_hours"


class PeriodState(models.TextChoices):
    OPEN = "open", "Open"
    CLOSING = "closing", "Closing (grace period)"
    CLOSED = "closed", "Closed"


class BillingPeriod(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    label = models.CharField(max_length=7, unique=True)  # "2025-03"
    starts_at = models.DateTimeField(unique=True)
    ends_at = models.DateTimeField()
    timezone = models.CharField(max_length=64)
    state = models.CharField(max_length=8, choices=PeriodState.choices, default=PeriodState.OPEN)
    closing_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    closed_by = models.ForeignKey(
        "accounts.User", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    report_built_at = models.DateTimeField(null=True, blank=True)
    # The report's reconciliation and roll-ups, as built (JSON-ready strings for Decimals).
    summary = models.JSONField(default=dict, blank=True)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["-starts_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(ends_at__gt=models.F("starts_at")), name="period_ends_after_start"
            )
        ]

    def __str__(self) -> str:
        return self.label


class ReportLine(models.Model):
    """One chargeback line of a period: a tenant's charge on a pool at one price, a pool's idle
    capacity, or an adjustment of an earlier period."""

    period = models.ForeignKey(BillingPeriod, on_delete=models.PROTECT, related_name="lines")
    line_no = models.PositiveIntegerField()
    kind = models.CharField(max_length=16)  # charge, idle, idle_share, adjustment, idle_adjustment, credit
    tenant = models.ForeignKey(
        "tenants.Tenant", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    tenant_path = models.CharField(max_length=2000, blank=True)
    tenant_slug = models.CharField(max_length=63, blank=True)
    cost_centre = models.CharField(max_length=64, blank=True)
    pool_name = models.CharField(max_length=600, blank=True)  # cluster/pool
    flavor_name = models.CharField(max_length=63, blank=True)
    gpu_model = models.CharField(max_length=100, blank=True)
    currency = models.CharField(max_length=3, blank=True)
    unit_price = models.DecimalField(max_digits=18, decimal_places=6, null=True, blank=True)
    ge_hours = models.DecimalField(max_digits=QTY_DIGITS, decimal_places=QTY_PLACES)
    card_hours = models.DecimalField(max_digits=QTY_DIGITS, decimal_places=QTY_PLACES)
    amount_exact = models.DecimalField(
        max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES, null=True, blank=True
    )
    amount = models.DecimalField(max_digits=MONEY_DIGITS, decimal_places=4, null=True, blank=True)
    adjusts = models.CharField(max_length=7, blank=True)  # label of the period an adjustment corrects
    basis = models.CharField(max_length=16, blank=True)  # the rate card's basis that priced it
    used_ge_hours = models.DecimalField(  # GE-hours used (utilisation meter), null when not measured
        max_digits=QTY_DIGITS, decimal_places=QTY_PLACES, null=True, blank=True
    )
    rate_card_ref = models.CharField(max_length=36, blank=True)  # the pricing card's id (not a FK: frozen)
    note = models.CharField(max_length=200, blank=True)  # a credit line's reason, as finance gave it

    objects = ReportLineQuerySet.as_manager()

    class Meta:
        ordering = ["period", "line_no"]
        constraints = [models.UniqueConstraint(fields=["period", "line_no"], name="report_line_number")]

    def __str__(self) -> str:
        return f"{self.period_id} #{self.line_no} {self.kind}"


class Adjustment(models.Model):
    """Late data for a closed period: the change in one share's hour (or, meter ``IDLE_METER``, in a
    node's idle card-hours for the hour, share key ``idle/<node>``), booked in an open period."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    period = models.ForeignKey(BillingPeriod, on_delete=models.PROTECT, related_name="adjustments")
    adjusts_period = models.ForeignKey(BillingPeriod, on_delete=models.PROTECT, related_name="adjusted_by")
    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.PROTECT, related_name="+")
    hour = models.DateTimeField()
    share_key = models.CharField(max_length=600)
    meter = models.CharField(max_length=32)
    tenant = models.ForeignKey(
        "tenants.Tenant", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    pool = models.ForeignKey(
        "inventory.NodePool", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    pool_name = models.CharField(max_length=253, blank=True)
    gpu_model = models.CharField(max_length=100, blank=True)
    flavor_name = models.CharField(max_length=63, blank=True)
    quantity_delta = models.DecimalField(max_digits=LEDGER_DIGITS, decimal_places=LEDGER_PLACES)
    card_hours_delta = models.DecimalField(max_digits=LEDGER_DIGITS, decimal_places=LEDGER_PLACES)
    reason = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)

    objects = TenantUsageQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "hour", "share_key"]
        indexes = [models.Index(fields=["adjusts_period", "cluster", "share_key", "meter", "hour"])]

    def __str__(self) -> str:
        return f"adjust {self.share_key} {self.hour:%Y-%m-%dT%H} by {self.card_hours_delta}"
