"""Statements finance sends (one per tenant and per cost centre of a closed period), manual credits
and charges, and the exchange rates that let a period hold a second currency.

A statement's lines are the period's frozen report lines; the row stores its number and totals as
issued, so a statement reads the same every time it is opened. A credit (negative) or charge
(positive) is booked in an open period and becomes a ``credit`` report line when that period's
report is built; once the period closes, the database refuses any change to it (migration 0008).
"""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from inventory.scoping import PlatformOnlyQuerySet
from metering.scoping import TenantUsageQuerySet


class StatementKind(models.TextChoices):
    TENANT = "tenant", "Tenant"
    COST_CENTRE = "cost_centre", "Cost centre"


class Statement(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    period = models.ForeignKey("metering.BillingPeriod", on_delete=models.PROTECT, related_name="statements")
    number = models.CharField(max_length=32, unique=True)  # "2025-03-0001"
    kind = models.CharField(max_length=12, choices=StatementKind.choices)
    # A tenant's statement names it; a cost centre's has none (platform-only through the door).
    tenant = models.ForeignKey(
        "tenants.Tenant", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    tenant_slug = models.CharField(max_length=63, blank=True)
    tenant_name = models.CharField(max_length=200, blank=True)
    cost_centre = models.CharField(max_length=64, blank=True)
    currency = models.CharField(max_length=3, blank=True)  # "" when nothing of it was priced
    charges = models.DecimalField(max_digits=24, decimal_places=4)
    adjustments = models.DecimalField(max_digits=24, decimal_places=4)
    credits = models.DecimalField(max_digits=24, decimal_places=4)
    total = models.DecimalField(max_digits=24, decimal_places=4)
    unpriced_ge_hours = models.DecimalField(max_digits=24, decimal_places=9, default=0)
    issued_at = models.DateTimeField(default=timezone.now)

    objects = TenantUsageQuerySet.as_manager()

    class Meta:
        ordering = ["period", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["period", "kind", "tenant", "cost_centre", "currency"],
                name="statement_one_per_addressee",
                nulls_distinct=False,
            )
        ]

    def __str__(self) -> str:
        return f"statement {self.number}"


class Credit(models.Model):
    """A manual credit (negative amount) or charge (positive) of a tenant, with the reason finance gave."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    period = models.ForeignKey("metering.BillingPeriod", on_delete=models.PROTECT, related_name="credits")
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.PROTECT, related_name="+")
    currency = models.CharField(max_length=3)
    amount = models.DecimalField(max_digits=18, decimal_places=4)
    reason = models.CharField(max_length=200)
    created_by = models.ForeignKey(
        "accounts.User", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = TenantUsageQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [models.CheckConstraint(condition=~models.Q(amount=0), name="credit_not_zero")]

    def __str__(self) -> str:
        return f"{'credit' if self.amount < 0 else 'charge'} {self.amount} {self.currency}"


class ExchangeRate(models.Model):
    """What one unit of ``currency`` is worth in the period's currency: set by finance, it lets a
    period hold prices in a second currency (without one, a period has one currency)."""

    period = models.ForeignKey("metering.BillingPeriod", on_delete=models.PROTECT, related_name="rates")
    currency = models.CharField(max_length=3)
    rate = models.DecimalField(max_digits=18, decimal_places=8)
    source = models.CharField(max_length=200, blank=True)  # where finance read it, e.g. "ECB reference"
    as_of = models.DateField(null=True, blank=True)  # the date of the rate at that source
    set_by = models.ForeignKey(
        "accounts.User", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["period", "currency"], name="exchange_rate_per_currency"),
            models.CheckConstraint(condition=models.Q(rate__gt=0), name="exchange_rate_positive"),
        ]

    def __str__(self) -> str:
        return f"1 {self.currency} = {self.rate}"
