"""The scoping door: what a user may see and manage of the tenant tree, and of anything a tenant owns.

Roles (DESIGN §1, issue #2): platform-admins and finance see every tenant; a tenant-admin sees and
manages the subtree of each tenant it administers; a member or viewer sees the tenants it belongs to.
Every tenant-owned queryset in every app derives from TenantOwnedQuerySet, so the rule lives here once.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import reduce
from operator import or_
from typing import TYPE_CHECKING, Any, TypeVar

from django.apps import apps
from django.db import models

if TYPE_CHECKING:
    from gpuplatform.accounts.models import User
    from tenants.models import Tenant

ADMIN_ROLE = "tenant-admin"
_M = TypeVar("_M", bound=models.Model)


# The door is asked several times in one request (the queryset, the serializer, the services): inside
# `memberships_read_once()`, which the middleware opens around each request, a user's memberships are
# read once. Writes to memberships and tenant paths call `forget_memberships()`; outside a request
# (tasks, the shell, tests calling services) nothing is remembered.
_memo: ContextVar[dict[Any, list[tuple[str, str, uuid.UUID]]] | None] = ContextVar(
    "scoping_memberships", default=None
)


@contextmanager
def memberships_read_once() -> Iterator[None]:
    token = _memo.set({})
    try:
        yield
    finally:
        _memo.reset(token)


def forget_memberships() -> None:
    memo = _memo.get()
    if memo is not None:
        memo.clear()


def _memberships(user: Any) -> list[tuple[str, str, uuid.UUID]]:
    """(role, tenant path, tenant id) of the user's memberships in active use."""
    memo = _memo.get()
    if memo is not None and user.pk in memo:
        return memo[user.pk]
    membership = apps.get_model("tenants", "Membership")
    rows = list(membership.objects.filter(user=user).values_list("role", "tenant__path", "tenant_id"))
    if memo is not None:
        memo[user.pk] = rows
    return rows


@dataclass(frozen=True)
class Visibility:
    """What one user sees of the tree, read once: decide many tenants without a query each."""

    sees_all: bool
    admin_paths: tuple[str, ...]
    direct_ids: frozenset[uuid.UUID]

    def sees_path(self, tenant_id: uuid.UUID, path: str) -> bool:
        if self.sees_all or tenant_id in self.direct_ids:
            return True
        return any(path.startswith(admin_path) for admin_path in self.admin_paths)


def visibility_of(user: Any) -> Visibility:
    if not user.is_authenticated or not user.is_active:
        return Visibility(sees_all=False, admin_paths=(), direct_ids=frozenset())
    if user.sees_all_tenants:
        return Visibility(sees_all=True, admin_paths=(), direct_ids=frozenset())
    memberships = _memberships(user)
    return Visibility(
        sees_all=False,
        admin_paths=tuple(path for role, path, _ in memberships if role == ADMIN_ROLE),
        direct_ids=frozenset(tenant_id for role, _, tenant_id in memberships if role != ADMIN_ROLE),
    )


def visible_tenant_q(user: Any) -> models.Q | None:
    """A filter on Tenant selecting what ``user`` may see; None means everything."""
    visibility = visibility_of(user)
    if visibility.sees_all:
        return None
    clauses = [models.Q(path__startswith=path) for path in visibility.admin_paths]
    if visibility.direct_ids:
        clauses.append(models.Q(pk__in=visibility.direct_ids))
    return reduce(or_, clauses) if clauses else models.Q(pk__in=[])


def manageable_tenant_q(user: Any) -> models.Q | None:
    """A filter on Tenant selecting what ``user`` may change; None means everything."""
    if not user.is_authenticated or not user.is_active:
        return models.Q(pk__in=[])
    if user.is_platform_admin:
        return None
    paths = [path for role, path, _ in _memberships(user) if role == ADMIN_ROLE]
    return reduce(or_, (models.Q(path__startswith=p) for p in paths)) if paths else models.Q(pk__in=[])


def admin_root_paths(user: Any) -> list[str]:
    """Paths of the tenants where ``user`` holds tenant-admin: the tops of what it manages."""
    return [path for role, path, _ in _memberships(user) if role == ADMIN_ROLE]


def can_manage(user: User, tenant: Tenant) -> bool:
    if user.is_platform_admin:
        return True
    return any(tenant.path.startswith(path) for path in admin_root_paths(user))


def holds_role(user: User, tenant: Tenant, roles: frozenset[str]) -> bool:
    """The user holds one of ``roles`` on ``tenant`` itself (a membership there, not above)."""
    return any(role in roles and tenant_id == tenant.pk for role, _, tenant_id in _memberships(user))


def can_manage_strictly_below(user: User, tenant: Tenant) -> bool:
    """True when ``tenant`` lies below (not at) a tenant the user administers: a tenant-admin may
    restructure and delete inside its subtree, but not move or delete the subtree's own top."""
    if user.is_platform_admin:
        return True
    return any(tenant.path.startswith(path) and tenant.path != path for path in admin_root_paths(user))


class TenantQuerySet(models.QuerySet["Tenant"]):
    def visible_to(self, user: User) -> TenantQuerySet:
        q = visible_tenant_q(user)
        return self if q is None else self.filter(q)

    def manageable_by(self, user: User) -> TenantQuerySet:
        q = manageable_tenant_q(user)
        return self if q is None else self.filter(q)

    def subtree_of(self, tenant: Tenant) -> TenantQuerySet:
        return self.filter(path__startswith=tenant.path)


class TenantOwnedQuerySet(models.QuerySet[_M]):
    """For models with a ``tenant`` foreign key: visible when the tenant is."""

    tenant_field = "tenant"

    def visible_to(self, user: User) -> TenantOwnedQuerySet[_M]:
        q = visible_tenant_q(user)
        if q is None:
            return self
        tenant_model = apps.get_model("tenants", "Tenant")
        return self.filter(**{f"{self.tenant_field}__in": tenant_model.objects.filter(q).values("pk")})


class MembershipQuerySet(TenantOwnedQuerySet["Membership"]):  # type: ignore[name-defined]
    def visible_to(self, user: User) -> MembershipQuerySet:
        """Memberships of visible tenants, and always the user's own."""
        if not user.is_authenticated:
            return self.none()
        q = visible_tenant_q(user)
        if q is None:
            return self
        tenant_model = apps.get_model("tenants", "Tenant")
        return self.filter(
            models.Q(tenant__in=tenant_model.objects.filter(q).values("pk")) | models.Q(user=user)
        )
