"""Visibility of the capacity catalogue: flavors and priority classes are platform objects, but one
may be dedicated to a subtree of the tenant tree, and then only that subtree sees and uses it."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, TypeVar

from django.apps import apps
from django.db import models

from tenants.scoping import visible_tenant_q

if TYPE_CHECKING:
    from gpuplatform.accounts.models import User

_M = TypeVar("_M", bound=models.Model)


def reachable_tenant_ids(user: Any) -> set[uuid.UUID] | None:
    """Tenants the user sees and their ancestors (None: all). A catalogue entry dedicated to an
    ancestor serves the whole subtree below it, so a team sees its department's dedicated flavors."""
    q = visible_tenant_q(user)
    if q is None:
        return None
    tenant_model = apps.get_model("tenants", "Tenant")
    ids: set[uuid.UUID] = set()
    for path in tenant_model.objects.filter(q).values_list("path", flat=True):
        ids.update(uuid.UUID(part) for part in path.strip("/").split("/") if part)
    return ids


def usable_by(tenant_path: str, owner_path: str | None) -> bool:
    """A dedicated entry (owner set) serves its owner's subtree; an undedicated one serves everyone."""
    return owner_path is None or tenant_path.startswith(owner_path)


class DedicatedQuerySet(models.QuerySet[_M]):
    """For catalogue models with an optional ``tenant`` (dedicated to that subtree) foreign key."""

    def visible_to(self, user: User) -> DedicatedQuerySet[_M]:
        if not user.is_authenticated:
            return self.none()
        ids = reachable_tenant_ids(user)
        if ids is None:
            return self
        return self.filter(models.Q(tenant__isnull=True) | models.Q(tenant_id__in=ids))
