"""Applying a login's group claims: the person's platform role and the memberships the mapping makes,
in one transaction with their audit events."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from gpuplatform.accounts.models import User
from gpuplatform.audit.services import record_event
from tenants.models import Membership, SsoGrant, SsoIdentity, Tenant
from tenants.sso.mapping import Desired


@dataclass
class GrantChanges:
    platform_role: tuple[str, str] | None = None  # (before, after) when it changed
    added: list[tuple[str, str]] = field(default_factory=list)  # (tenant slug, role)
    changed: list[tuple[str, str, str]] = field(default_factory=list)  # (slug, before, after)
    removed: list[tuple[str, str]] = field(default_factory=list)
    unknown_tenants: list[str] = field(default_factory=list)  # named by the mapping, not here
    left_alone: list[str] = field(default_factory=list)  # memberships made by hand, not by the mapping

    @property
    def any(self) -> bool:
        return bool(self.platform_role or self.added or self.changed or self.removed)


def apply_sso_grants(
    *, user_id: int, identity: SsoIdentity, groups: list[str], desired: Desired
) -> GrantChanges:
    """Make the user's platform role and mapped memberships what ``desired`` says, and remember the
    groups. Locks the user's row (two logins at once apply one after the other). Idempotent: a login
    with the same groups changes nothing and writes no event."""
    changes = GrantChanges()
    with transaction.atomic():
        user = User.objects.select_for_update().get(pk=user_id)
        before = _state(user)
        if user.platform_role != desired.platform_role:
            changes.platform_role = (user.platform_role, desired.platform_role)
            user.platform_role = desired.platform_role
            user.save(update_fields=["platform_role"])
        tenants = {t.slug: t for t in Tenant.objects.filter(slug__in=list(desired.tenants))}
        changes.unknown_tenants = sorted(set(desired.tenants) - set(tenants))
        grants = {g.tenant_id: g for g in SsoGrant.objects.filter(user=user).select_related("tenant")}
        memberships = {m.tenant_id: m for m in Membership.objects.filter(user=user)}
        for slug, role in sorted(desired.tenants.items()):
            tenant = tenants.get(slug)
            if tenant is None:
                continue
            _grant(user, tenant, role, grants.pop(tenant.pk, None), memberships.get(tenant.pk), changes)
        for grant in grants.values():  # mapped before, no group grants it now
            membership = memberships.get(grant.tenant_id)
            if membership is not None:
                record_event(
                    actor=None,
                    action="membership.deleted",
                    obj=membership,
                    before={"user": user.username, "role": membership.role, "via": "single sign-on"},
                    tenant_id=grant.tenant_id,
                )
                membership.delete()
                changes.removed.append((grant.tenant.slug, grant.role))
            grant.delete()
        identity.groups = sorted(set(groups))
        identity.last_login_at = timezone.now()
        identity.save(update_fields=["groups", "last_login_at"])
        if changes.any:
            record_event(
                actor=None,
                action="sso.grants_applied",
                obj=user,
                before=before,
                after={**_state(user), "groups": identity.groups, "unknown_tenants": changes.unknown_tenants},
            )
    return changes


def _grant(
    user: User,
    tenant: Tenant,
    role: str,
    grant: SsoGrant | None,
    membership: Membership | None,
    changes: GrantChanges,
) -> None:
    if membership is None:
        membership = Membership.objects.create(tenant=tenant, user=user, role=role)
        record_event(
            actor=None,
            action="membership.created",
            obj=membership,
            after={"user": user.username, "role": role, "via": "single sign-on"},
            tenant_id=tenant.pk,
        )
        changes.added.append((tenant.slug, role))
    elif grant is None:
        changes.left_alone.append(tenant.slug)  # an admin's membership: the mapping does not own it
        return
    elif membership.role != role:
        record_event(
            actor=None,
            action="membership.updated",
            obj=membership,
            before={"role": membership.role},
            after={"role": role, "via": "single sign-on"},
            tenant_id=tenant.pk,
        )
        changes.changed.append((tenant.slug, membership.role, role))
        membership.role = role
        membership.save(update_fields=["role"])
    SsoGrant.objects.update_or_create(user=user, tenant=tenant, defaults={"role": role})


def _state(user: User) -> dict[str, Any]:
    return {
        "platform_role": user.platform_role,
        "memberships": {
            m.tenant.slug: m.role for m in Membership.objects.filter(user=user).select_related("tenant")
        },
    }
