"""Tenant identity: the tenant tree, memberships with roles, and the namespaces a tenant owns."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone

from tenants.scoping import MembershipQuerySet, TenantQuerySet

if TYPE_CHECKING:
    from gpuplatform.accounts.models import User  # noqa: F401

# Kubernetes DNS-1123 label: slugs become namespace prefixes and label values.
dns_label = RegexValidator(
    r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
    "Use 1-63 lowercase letters, digits and '-', starting and ending with a letter or digit.",
    code="invalid_slug",
)


class TenantState(models.TextChoices):
    ACTIVE = "active", "Active"
    SUSPENDED = "suspended", "Suspended"


class Tenant(models.Model):
    """A node of the tenant tree (organisation → department → team, any depth).

    ``path`` is the materialised path of ids from the root ("/<hex>/<hex>/"), so a subtree is one
    prefix match and moving a subtree is one UPDATE; ``depth`` is 0 for roots.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    parent = models.ForeignKey(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="children"
    )
    path = models.CharField(max_length=2000, db_index=True, editable=False)
    depth = models.PositiveSmallIntegerField(default=0, editable=False)
    slug = models.CharField(max_length=63, unique=True, validators=[dns_label])
    display_name = models.CharField(max_length=200)
    cost_centre = models.CharField(max_length=64, blank=True)
    namespace_prefix = models.CharField(
        max_length=40,
        blank=True,
        help_text="Set by platform-admins: tenant-admins below may assign namespaces starting with it.",
    )
    state = models.CharField(max_length=16, choices=TenantState.choices, default=TenantState.ACTIVE)
    # A child a tenant-admin made inside its own subtree, rather than a tenant a platform-admin set up:
    # its requests are governed, for approval, by the platform-made tenant above it
    # (quotas/services/requests.py: governing_tenant), so making a child cannot make an approver.
    created_by_tenant_admin = models.BooleanField(default=False, editable=False)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["path"]

    def __str__(self) -> str:
        return self.slug

    @property
    def ancestor_ids(self) -> list[uuid.UUID]:
        """Ids from the root down to the parent."""
        return [uuid.UUID(part) for part in self.path.strip("/").split("/")[:-1] if part]

    @property
    def lineage_paths(self) -> list[str]:
        """Paths from the root down to this tenant itself: what a rule set on any of them covers."""
        return [self.path[: i + 1] for i, ch in enumerate(self.path) if ch == "/" and i > 0]

    @staticmethod
    def path_for(tenant_id: uuid.UUID, parent_path: str | None) -> str:
        return f"{parent_path or '/'}{tenant_id.hex}/"


class Role(models.TextChoices):
    TENANT_ADMIN = "tenant-admin", "Tenant admin"
    MEMBER = "member", "Member"
    VIEWER = "viewer", "Viewer"


class Membership(models.Model):
    """A user's role in one tenant. A tenant-admin's rights reach the tenant's whole subtree."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(default=timezone.now)

    objects = MembershipQuerySet.as_manager()

    class Meta:
        ordering = ["tenant__path", "user__username"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "user"],
                name="membership_unique_user_per_tenant",
                violation_error_code="duplicate",
            )
        ]

    def __str__(self) -> str:
        return f"{self.user} as {self.role} of {self.tenant}"


class TenantNamespace(models.Model):
    """A Kubernetes namespace owned by a tenant, on one cluster ('' = the same name on every cluster).

    Namespace ownership is how the cluster's pods and claims are attributed to tenants.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="namespaces")
    cluster = models.CharField(max_length=63, blank=True, default="")
    namespace = models.CharField(max_length=63, validators=[dns_label])

    class Meta:
        ordering = ["cluster", "namespace"]
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "namespace"],
                name="namespace_owned_once",
                violation_error_code="namespace_taken",
            )
        ]

    def __str__(self) -> str:
        return f"{self.cluster or '*'}/{self.namespace}"
