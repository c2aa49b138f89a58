"""Who sees what of metering (DESIGN §6): tenants their own usage and cost lines, finance and
platform-admins everything; rate cards and billing periods are visible to every signed-in user (a
tenant reads the price it pays), and changed by finance and platform-admins only (services check)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from django.db import models

from tenants.scoping import TenantOwnedQuerySet

if TYPE_CHECKING:
    from gpuplatform.accounts.models import User

_M = TypeVar("_M", bound=models.Model)


class TenantUsageQuerySet(TenantOwnedQuerySet[_M]):
    """Usage rows and report lines: a NULL tenant (unassigned usage, idle capacity) is platform-only,
    as ``tenant__in`` never matches NULL."""


class SignedInQuerySet(models.QuerySet[Any]):
    def visible_to(self, user: User) -> SignedInQuerySet:
        if user.is_authenticated and user.is_active:
            return self
        return self.none()
