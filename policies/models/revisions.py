"""Immutable, numbered revisions of a pool's rendered bundle (docs/agent-protocol.md).

A revision is never edited: a change of policy makes the next number. Its ``bundle`` is what the
compiler rendered ({files, labels, configmaps}); ``content_hash`` is over the canonical JSON of it, and
``signature`` is the Ed25519 signature of that hash's text by the key ``key_id`` (policies/signing.py).
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from inventory.scoping import PlatformOnlyQuerySet


class PolicyRevision(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    pool = models.ForeignKey("inventory.NodePool", on_delete=models.PROTECT, related_name="policy_revisions")
    number = models.PositiveIntegerField()  # 1, 2, ... per pool
    previous = models.ForeignKey("self", on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    # The policy as declared when the revision was made (mode and parameters), for the diff and the audit.
    policy = models.JSONField()
    bundle = models.JSONField()  # {"files": [...], "labels": {...}, "configmaps": [...]}
    content_hash = models.CharField(max_length=80)  # "sha256:<hex>"
    signature = models.CharField(max_length=200)  # base64 Ed25519 over content_hash's UTF-8 bytes
    key_id = models.CharField(max_length=64)
    needs_drain = models.BooleanField(default=False)  # a MIG geometry change: a planned operation
    note = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["pool", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["pool", "number"], name="policy_revision_number_per_pool")
        ]

    def __str__(self) -> str:
        return f"{self.pool_id} r{self.number}"
