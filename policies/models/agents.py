"""Node agents and the bootstrap tokens they register with (docs/agent-protocol.md, "Credentials").

Secrets are never stored: a bootstrap token and an agent credential are kept as the SHA-256 of their
text (both are 256-bit random, so a plain hash is enough; there is nothing to brute-force), looked
up by that hash, and shown once when created.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from django.conf import settings
from django.db import models
from django.utils import timezone

from inventory.scoping import PlatformOnlyQuerySet


class AgentBootstrapToken(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=100)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    registrations = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "id"]

    def __str__(self) -> str:
        return f"bootstrap {self.name}"

    def usable(self, now: datetime | None = None) -> bool:
        return self.revoked_at is None and self.expires_at > (now or timezone.now())


class NodeAgent(models.Model):
    """One registration of an agent on a node. A bootstrap token registers a node only while every
    agent it had is released (``released_at``: a platform-admin reset the node), so a node has at most
    one live credential and a revoked one is not replaced behind the admin's back."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.CASCADE, related_name="+")
    node = models.ForeignKey("inventory.Node", on_delete=models.CASCADE, related_name="agents")
    credential_hash = models.CharField(max_length=64, unique=True, editable=False)
    bootstrap_token = models.ForeignKey(
        AgentBootstrapToken, on_delete=models.SET_NULL, null=True, blank=True, related_name="agents"
    )
    rotate_after = models.DateTimeField()
    registered_at = models.DateTimeField(default=timezone.now)
    rotated_at = models.DateTimeField(null=True, blank=True)
    rotations = models.PositiveIntegerField(default=0)
    revoked_at = models.DateTimeField(null=True, blank=True)
    released_at = models.DateTimeField(null=True, blank=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)
    agent_version = models.CharField(max_length=64, blank=True)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["node__name", "-registered_at"]

    def __str__(self) -> str:
        return f"agent {self.node_id}"
