"""Who sees what of metering (DESIGN §6): tenants their own usage and cost lines, finance and
platform-admins everything. A tenant reads the prices it pays: GPU-model rate cards and those of the
flavors it may see. Billing periods carry every tenant's totals (the summary), so they are platform
objects; tenants read their share through the report lines. Changes are finance's and platform-admins'
only (the services check)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from django.apps import apps
from django.db import models

from tenants.scoping import TenantOwnedQuerySet

if TYPE_CHECKING:
    from gpuplatform.accounts.models import User

_M = TypeVar("_M", bound=models.Model)


class TenantUsageQuerySet(TenantOwnedQuerySet[_M]):
    """Usage rows and report lines: a NULL tenant (unassigned usage, idle capacity) is platform-only,
    as ``tenant__in`` never matches NULL."""


class RateCardQuerySet(models.QuerySet[Any]):
    def visible_to(self, user: User) -> RateCardQuerySet:
        if not user.is_authenticated or not user.is_active:
            return self.none()
        if user.sees_all_tenants:
            return self
        flavors = apps.get_model("quotas", "Flavor").objects.visible_to(user).values("pk")
        return self.filter(models.Q(flavor__isnull=True) | models.Q(flavor__in=flavors))
