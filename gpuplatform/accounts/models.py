"""Users with their platform role, and API tokens for REST."""

from __future__ import annotations

import uuid

from django.contrib.auth.models import AbstractUser
from django.db import models
from django.utils import timezone


class PlatformRole(models.TextChoices):
    NONE = "", "None"
    PLATFORM_ADMIN = "platform-admin", "Platform admin"
    FINANCE = "finance", "Finance"


class User(AbstractUser):
    """A person or a service account. Tenant roles live in tenants.Membership."""

    platform_role = models.CharField(max_length=20, choices=PlatformRole.choices, default="", blank=True)
    is_service_account = models.BooleanField(
        default=False,
        help_text="A non-human identity: cannot log in to the UI, holds tokens made by an admin.",
    )

    @property
    def is_platform_admin(self) -> bool:
        return self.is_active and (self.platform_role == PlatformRole.PLATFORM_ADMIN or self.is_superuser)

    @property
    def is_finance(self) -> bool:
        return self.is_active and self.platform_role == PlatformRole.FINANCE

    @property
    def sees_all_tenants(self) -> bool:
        return self.is_platform_admin or self.is_finance


class TokenScope(models.TextChoices):
    READ = "read", "Read"
    WRITE = "write", "Write"


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def visible_to(self, user: User) -> ApiTokenQuerySet:
        """Tokens are personal: a user sees their own; a platform-admin also those of service accounts."""
        if not user.is_authenticated:
            return self.none()
        if user.is_platform_admin:
            return self.filter(models.Q(user=user) | models.Q(user__is_service_account=True))
        return self.filter(user=user)

    def usable(self) -> ApiTokenQuerySet:
        now = timezone.now()
        return self.filter(revoked_at__isnull=True).filter(models.Q(expires_at__gt=now))


class ApiToken(models.Model):
    """A bearer token. Only the SHA-256 of its secret is kept; the secret is shown once, at creation.

    The secret is 256 random bits, so a fast hash is as safe as a slow one and costs microseconds per
    request instead of the ~100 ms of a password hash.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    key_id = models.CharField(max_length=16, unique=True, help_text="Public part of the token, for lookup.")
    secret_hash = models.CharField(max_length=64)
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(User, on_delete=models.SET_NULL, null=True, related_name="+")
    expires_at = models.DateTimeField(help_text="Every token expires (at most 366 days after it is made).")
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "name"],
                condition=models.Q(revoked_at__isnull=True),
                name="api_token_unique_live_name_per_user",
                violation_error_message="You already have a live token with this name.",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.key_id}…)"

    @property
    def can_write(self) -> bool:
        return TokenScope.WRITE in self.scopes

    @property
    def state(self) -> str:
        if self.revoked_at:
            return "revoked"
        if self.expires_at and self.expires_at <= timezone.now():
            return "expired"
        return "active"
