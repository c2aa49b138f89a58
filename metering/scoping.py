"""Who sees what of metering (DESIGN §6): tenants their own usage and cost lines, finance and
platform-admins everything. A tenant reads the prices it pays: GPU-model rate cards and those of the
flavors it may see. Billing periods carry every tenant's totals (the summary), so they are platform
objects; tenants read their share through the report lines. Changes are finance's and platform-admins'
only (the services check)."""

from __future__ import annotations

from functools import reduce
from operator import or_
from typing import TYPE_CHECKING, Any, TypeVar

from django.apps import apps
from django.db import models

from tenants.scoping import TenantOwnedQuerySet, visibility_of

if TYPE_CHECKING:
    from gpuplatform.accounts.models import User

_M = TypeVar("_M", bound=models.Model)


class TenantUsageQuerySet(TenantOwnedQuerySet[_M]):
    """Usage rows and report lines: a NULL tenant (unassigned usage, idle capacity) is platform-only,
    as ``tenant__in`` never matches NULL."""


def member_tenant_ids(user: Any) -> list[str] | None:
    """The hex ids of every tenant ``user`` holds a role on (any role); None: sees everything."""
    visibility = visibility_of(user)
    if visibility.sees_all:
        return None
    tops = {path.strip("/").rsplit("/", 1)[-1] for path in visibility.admin_paths}
    return sorted(tops | {tenant_id.hex for tenant_id in visibility.direct_ids})


def _path_holds_any(field: str, ids: list[str]) -> models.Q:
    """``field`` (a materialised path of hex ids) names one of ``ids``: the tenant or a tenant above it."""
    if not ids:
        return models.Q(pk__in=[])
    return reduce(or_, (models.Q(**{f"{field}__contains": f"/{hex_id}/"}) for hex_id in ids))


class SubtreeUsageQuerySet(TenantUsageQuerySet[_M]):
    """Hourly usage: costs roll up the tree (issue 32), so every person of a tenant, a viewer of a
    department as much as its admin, sees the usage of the tenant and of everything below it as the
    tree is now. (Other tenant objects show a plain member only its own tenant.)"""

    def visible_to(self, user: User) -> SubtreeUsageQuerySet[_M]:
        ids = member_tenant_ids(user)
        if ids is None:
            return self
        tenant_model = apps.get_model("tenants", "Tenant")
        below = tenant_model.objects.filter(_path_holds_any("path", ids)).values("pk")
        return self.filter(tenant__in=below)


class ReportLineQuerySet(TenantUsageQuerySet[_M]):
    """Report lines: seen by the people of every tenant on the line's own ``tenant_path``, the tree
    as it was when the line was built. A closed period's lines, roll-ups and statements are frozen
    with the tree they were closed under, so after a reorganisation the old department keeps seeing
    the costs it was billed and the new one sees the tenant's costs from the lines built since (an open
    period's lines are rebuilt by each report build and by the close). The tenant itself is always on
    its path. Lines with no tenant (idle, unassigned) are platform-only."""

    def visible_to(self, user: User) -> ReportLineQuerySet[_M]:
        ids = member_tenant_ids(user)
        if ids is None:
            return self
        return self.filter(_path_holds_any("tenant_path", ids), tenant__isnull=False)


class CostScopeQuerySet(models.QuerySet[Any]):
    """Tenants whose costs ``user`` may see: its tenants and everything below them (any role), as
    the tree is now (the month under way is built with today's tree)."""

    def visible_to(self, user: User) -> CostScopeQuerySet:
        ids = member_tenant_ids(user)
        return self if ids is None else self.filter(_path_holds_any("path", ids))


class RateCardQuerySet(models.QuerySet[Any]):
    def visible_to(self, user: User) -> RateCardQuerySet:
        if not user.is_authenticated or not user.is_active:
            return self.none()
        if user.sees_all_tenants:
            return self
        flavors = apps.get_model("quotas", "Flavor").objects.visible_to(user).values("pk")
        return self.filter(models.Q(flavor__isnull=True) | models.Q(flavor__in=flavors))
