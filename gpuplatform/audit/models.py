"""The audit log: who changed what, before and after, written in the same transaction as the change."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models
from django.utils import timezone

if TYPE_CHECKING:
    from gpuplatform.accounts.models import User


class AuditEventQuerySet(models.QuerySet["AuditEvent"]):
    def visible_to(self, user: User) -> AuditEventQuerySet:
        """Platform-admins read the whole log; nobody else reads it (yet)."""
        if user.is_authenticated and user.is_platform_admin:
            return self.all()
        return self.none()


class AuditEvent(models.Model):
    """Append-only. ``tenant_id`` is the tenant the object belongs to, for filtering by tenant."""

    at = models.DateTimeField(default=timezone.now, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    actor_label = models.CharField(
        max_length=150, help_text="The actor's username, kept if the user is deleted."
    )
    action = models.CharField(max_length=64, db_index=True)
    object_type = models.CharField(max_length=64)
    object_id = models.CharField(max_length=64)
    object_repr = models.CharField(max_length=200)
    tenant_id = models.UUIDField(null=True, blank=True, db_index=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    request_id = models.CharField(max_length=64, blank=True)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["object_type", "object_id"])]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_label} {self.action} {self.object_repr}"

    @property
    def changed_fields(self) -> list[str]:
        before, after = self.before or {}, self.after or {}
        return sorted(key for key in set(before) | set(after) if before.get(key) != after.get(key))
