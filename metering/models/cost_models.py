"""On-premises cost models: what a GPU model's (or one flavor's pool's) cards cost, from which a
rate card's GE-hour price is derived (metering/chargeback/cost_model.py). Kept with the card it
priced, so the price can always be traced back to its inputs."""

from __future__ import annotations

import uuid
from decimal import Decimal

from django.db import models
from django.utils import timezone

from inventory.scoping import PlatformOnlyQuerySet


class CostModel(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    gpu_model = models.CharField(max_length=100)
    flavor = models.ForeignKey(
        "quotas.Flavor", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    currency = models.CharField(max_length=3)
    purchase_price_per_card = models.DecimalField(max_digits=18, decimal_places=2)
    amortisation_months = models.PositiveIntegerField()
    watts_under_load = models.DecimalField(max_digits=10, decimal_places=2)
    price_per_kwh = models.DecimalField(max_digits=12, decimal_places=6)
    pue = models.DecimalField(max_digits=5, decimal_places=3, default=Decimal("1.4"))
    hosting_per_card_month = models.DecimalField(max_digits=18, decimal_places=2, default=Decimal(0))
    hours_per_month = models.DecimalField(max_digits=8, decimal_places=2, default=Decimal(730))
    price_per_ge_hour = models.DecimalField(max_digits=18, decimal_places=6)  # as derived
    rate_card = models.OneToOneField(
        "metering.RateCard", on_delete=models.SET_NULL, null=True, blank=True, related_name="cost_model"
    )
    created_by = models.ForeignKey(
        "accounts.User", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["gpu_model", "-created_at"]

    def __str__(self) -> str:
        return f"{self.gpu_model} cost model: {self.price_per_ge_hour} {self.currency}/GE-h"
