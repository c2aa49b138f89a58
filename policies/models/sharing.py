"""A node pool's declared GPU sharing: one mode and its parameters (DESIGN §2, §5.4).

The declaration is editable; what nodes apply is never this row but an immutable PolicyRevision made
from it by ``policies.services.revisions.publish_policy``. ``published_revision`` says which number
the row last became, so the UI can tell "changed since last publish".
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from inventory.scoping import PlatformOnlyQuerySet


class SharingMode(models.TextChoices):
    # Values are those of policies.compiler.spec.SharingMode (the pure side); a test keeps them equal.
    EXCLUSIVE = "exclusive", "Exclusive whole GPU"
    MIG = "mig", "MIG"
    TIME_SLICING = "time-slicing", "Time-slicing"
    MPS = "mps", "MPS"
    HAMI = "hami", "HAMi soft shares"
    DRA = "dra", "DRA"


class SharingPolicy(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    pool = models.OneToOneField("inventory.NodePool", on_delete=models.PROTECT, related_name="sharing_policy")
    mode = models.CharField(max_length=16, choices=SharingMode.choices, default=SharingMode.EXCLUSIVE)
    # Normalised per mode by policies.compiler.normalise_parameters (see SharingSpec's docstring).
    parameters = models.JSONField(default=dict, blank=True)
    # The pool's own extended resource name ("" = nvidia.com/gpu-<pool>), so a ResourceQuota can hold
    # each pool apart (issue 12 item 2).
    resource_name = models.CharField(max_length=63, blank=True)
    published_revision = models.PositiveIntegerField(null=True, blank=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["pool__cluster__name", "pool__name"]

    def __str__(self) -> str:
        return f"{self.pool} {self.mode}"
