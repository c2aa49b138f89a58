"""Who sees what of the inventory (DESIGN §6: one scoping method per queryset).

Platform-admins and finance see everything. A tenant user sees the allocations and claims of the
tenants it may see, and the node pools that are shared or dedicated to one of those tenants (their free
capacity); clusters, nodes and GPUs are platform objects. The "unassigned" bucket (tenant NULL) is
platform-only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from django.apps import apps
from django.db import models

from tenants.scoping import TenantOwnedQuerySet, visible_tenant_q

if TYPE_CHECKING:
    from gpuplatform.accounts.models import User

_M = TypeVar("_M", bound=models.Model)


class PlatformOnlyQuerySet(models.QuerySet[_M]):
    def visible_to(self, user: User) -> PlatformOnlyQuerySet[_M]:
        if user.is_authenticated and user.sees_all_tenants:
            return self
        return self.none()


class NodePoolQuerySet(models.QuerySet[Any]):
    def visible_to(self, user: User) -> NodePoolQuerySet:
        if not user.is_authenticated or not user.is_active:
            return self.none()
        q = visible_tenant_q(user)
        if q is None:
            return self
        tenant_model = apps.get_model("tenants", "Tenant")
        visible = tenant_model.objects.filter(q).values("pk")
        if not tenant_model.objects.filter(q).exists():
            return self.none()  # an outsider belongs to no tenant and sees no capacity
        return self.filter(models.Q(tenant__isnull=True) | models.Q(tenant__in=visible))


class TenantHeldQuerySet(TenantOwnedQuerySet[_M]):
    """Allocations and claims: a NULL tenant (unassigned) is visible to platform roles only, which
    TenantOwnedQuerySet already gives, as ``tenant__in`` never matches NULL."""


class AllocationQuerySet(TenantHeldQuerySet[Any]):
    def open(self) -> AllocationQuerySet:
        return self.filter(ended_at__isnull=True)
