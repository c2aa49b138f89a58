"""SLOs (docs/slos.md): an SLI, an objective and a window, platform-wide or for one tenant's subtree;
their samples (good and total events per bucket of time), the alerts their burn rates raise, and the
webhook deliveries of those alerts with their log."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from inventory.scoping import PlatformOnlyQuerySet


class Slo(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=100, unique=True)
    sli = models.CharField(max_length=32)  # a kind registered in gpuplatform.sli_sources
    tenant = models.ForeignKey(
        "tenants.Tenant", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )  # None: platform-wide
    objective = models.DecimalField(max_digits=7, decimal_places=5)  # 0.99 = 99 %
    window_days = models.PositiveIntegerField(default=30)
    params = models.JSONField(default=dict, blank=True)
    receivers = models.ManyToManyField("metering.AlertReceiver", blank=True, related_name="slos")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    # The last evaluation that finished (None: never, or not since its SLI or scope changed).
    evaluated_at = models.DateTimeField(null=True, blank=True)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(objective__gt=0, objective__lt=1), name="slo_objective_between_0_and_1"
            )
        ]

    def __str__(self) -> str:
        return self.name


class SliSample(models.Model):
    slo = models.ForeignKey(Slo, on_delete=models.CASCADE, related_name="samples")
    start = models.DateTimeField()
    end = models.DateTimeField()
    good = models.DecimalField(max_digits=20, decimal_places=6)
    total = models.DecimalField(max_digits=20, decimal_places=6)
    computed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["slo", "start"]
        constraints = [
            models.UniqueConstraint(fields=["slo", "start"], name="sli_sample_once_per_bucket"),
            models.CheckConstraint(
                condition=models.Q(good__gte=0, good__lte=models.F("total")), name="sli_good_within_total"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.slo_id} {self.start:%Y-%m-%dT%H:%M}"


class AlertState(models.TextChoices):
    FIRING = "firing", "firing"
    RESOLVED = "resolved", "resolved"


class SloAlert(models.Model):
    """One burn-rate alert of one rule (fast_burn, slow_burn), from firing until resolved."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    slo = models.ForeignKey(Slo, on_delete=models.CASCADE, related_name="alerts")
    rule = models.CharField(max_length=16)
    state = models.CharField(max_length=16, choices=AlertState.choices, default=AlertState.FIRING)
    long_burn = models.DecimalField(max_digits=14, decimal_places=4)
    short_burn = models.DecimalField(max_digits=14, decimal_places=4)
    opened_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["-opened_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["slo", "rule"],
                condition=models.Q(state="firing"),
                name="slo_alert_one_firing_per_rule",
            )
        ]

    def __str__(self) -> str:
        return f"{self.slo_id} {self.rule} {self.state}"


class AlertReceiver(models.Model):
    """A webhook that alerts are POSTed to (JSON, signed with HMAC-SHA256 when a secret is set).
    Its URL is shown whole to platform-admins only (a path is often the bearer secret); the signing
    secret is stored encrypted (inventory.crypto) and never read back."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=100, unique=True)
    url = models.URLField(max_length=500)
    secret_encrypted = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class DeliveryState(models.TextChoices):
    PENDING = "pending", "pending"
    DELIVERED = "delivered", "delivered"
    GAVE_UP = "gave_up", "gave up"


class AlertDelivery(models.Model):
    """One notification (an alert firing or resolving) to one receiver: sent until a 2xx answers,
    with backoff, and never twice once delivered. Its id is the Idempotency-Key the receiver sees."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    alert = models.ForeignKey(SloAlert, on_delete=models.CASCADE, related_name="deliveries")
    receiver = models.ForeignKey(AlertReceiver, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=16)  # firing | resolved
    payload = models.JSONField()
    state = models.CharField(max_length=16, choices=DeliveryState.choices, default=DeliveryState.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    last_status = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["alert", "receiver", "event"], name="alert_delivery_once")
        ]

    def __str__(self) -> str:
        return f"{self.alert_id} {self.event} -> {self.receiver_id}"
