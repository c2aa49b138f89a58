"""Single sign-on: who an identity provider's subject is here, and which memberships its groups made."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from tenants.models.identity import Tenant


class SsoIdentity(models.Model):
    """A user as an identity provider knows them: (issuer, subject), never the e-mail address, which a
    provider may let people change (linking by it would hand a local account to whoever claims it)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identity"
    )
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    groups = models.JSONField(
        default=list, help_text="The groups of the last login, as the provider sent them."
    )
    last_login_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["issuer", "subject"], name="sso_identity_unique", violation_error_code="duplicate"
            )
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"


class SsoGrant(models.Model):
    """A membership the group mapping made: the next login removes it when no group grants it any
    more. Memberships an admin made by hand have no row here and are left alone."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_grants")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="sso_grants")
    role = models.CharField(max_length=16)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "tenant"], name="sso_grant_unique", violation_error_code="duplicate"
            )
        ]

    def __str__(self) -> str:
        return f"{self.user} as {self.role} of {self.tenant} (single sign-on)"
