"""Rate cards: the price of a GE-hour of a GPU model (optionally of one flavor's pool), effective over
whole hours. Overlapping cards for the same model and flavor are refused by the service and, on
PostgreSQL, by an exclusion constraint (metering/migrations/0002)."""

from __future__ import annotations

import uuid
from decimal import Decimal

from django.db import models
from django.utils import timezone

from metering.scoping import RateCardQuerySet


class Basis(models.TextChoices):
    ALLOCATION = "allocation", "Allocation (what was held)"
    UTILISATION = "utilisation", "Utilisation (what was used)"
    BLENDED = "blended", "Blended"


class RateCard(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    gpu_model = models.CharField(max_length=100)
    flavor = models.ForeignKey(
        "quotas.Flavor", on_delete=models.PROTECT, null=True, blank=True, related_name="rate_cards"
    )
    currency = models.CharField(max_length=3)
    price_per_ge_hour = models.DecimalField(max_digits=18, decimal_places=6)
    energy_price_per_kwh = models.DecimalField(max_digits=18, decimal_places=6, null=True, blank=True)
    basis = models.CharField(max_length=16, choices=Basis.choices, default=Basis.ALLOCATION)
    # Blended basis: the share of the price paid on what was held (the rest on what was used).
    blend_weight = models.DecimalField(
        max_digits=4, decimal_places=3, default=Decimal("0.5"), db_default=Decimal("0.5")
    )
    effective_from = models.DateTimeField()
    effective_to = models.DateTimeField(null=True, blank=True)  # exclusive; NULL: until further notice
    note = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = RateCardQuerySet.as_manager()

    class Meta:
        ordering = ["gpu_model", "flavor__name", "effective_from"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(effective_to__isnull=True)
                | models.Q(effective_to__gt=models.F("effective_from")),
                name="ratecard_ends_after_start",
                violation_error_message="A rate card must end after it starts.",
            ),
            models.CheckConstraint(
                condition=models.Q(price_per_ge_hour__gte=0), name="ratecard_price_not_negative"
            ),
            models.CheckConstraint(
                condition=models.Q(blend_weight__gte=0, blend_weight__lte=1),
                name="ratecard_blend_weight_in_unit",
                violation_error_message="A blend weight lies between 0 and 1.",
            ),
        ]

    def __str__(self) -> str:
        scope = self.flavor.name if self.flavor_id and self.flavor else self.gpu_model
        return (
            f"{scope} {self.price_per_ge_hour} {self.currency}/GE-h from {self.effective_from:%Y-%m-%d %H:%M}"
        )
