"""Onboarding a team in one go: a child tenant with its namespaces, quota per flavor, a queue, a
budget and members, each step but the tenant optional.

Each step is the existing service (tenants' create_tenant and add_membership, the catalogue's
create_entry), so the rules are theirs: authority flows down (a tenant-admin's grant is carved out of
the parent's quota and refused past it), namespaces need a delegated prefix, and so on. All steps run
in one transaction: the first refusal rolls back every earlier step and is raised naming its step, so
the form shows it in place and nothing was created. This lives in quotas, not tenants, because it
composes both (a lower app never imports a higher one)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal

from django.db import transaction

from gpuplatform.accounts.models import User
from gpuplatform.errors import DomainError
from quotas.models import Budget, Flavor, Queue, Quota
from quotas.services.catalogue import create_entry
from tenants.models import Tenant
from tenants.services import add_membership, create_tenant


@dataclass(frozen=True)
class QuotaGrant:
    flavor_id: uuid.UUID
    resource: str
    nominal: int


@dataclass(frozen=True)
class MemberGrant:
    username: str
    role: str


@dataclass(frozen=True)
class TeamPlan:
    """What to create. Empty or None parts are skipped."""

    slug: str
    display_name: str
    cost_centre: str = ""
    namespaces: tuple[tuple[str, str], ...] = ()  # (cluster or "" for every cluster, namespace)
    quotas: tuple[QuotaGrant, ...] = ()
    queue_name: str = ""
    queue_strategy: str = ""
    budget_ge_hours: Decimal | None = None
    budget_flavor_id: uuid.UUID | None = None  # None: one budget over every flavor
    budget_hard: bool = False
    members: tuple[MemberGrant, ...] = ()


class OnboardingRefused(DomainError):
    """A step's service refused: its error, with the step it came from ("tenant", "quota", "queue",
    "budget", "member") and the position of the quota or member among those asked for."""

    def __init__(self, *, step: str, error: DomainError, position: int | None = None) -> None:
        super().__init__(error.message, code=error.code, field=error.field)
        self.status = error.status
        self.title = error.title
        self.step = step
        self.position = position


def onboard_team(*, actor: User, parent_id: uuid.UUID, plan: TeamPlan) -> Tenant:
    """Create the team under ``parent_id`` as ``plan`` says, all or nothing (one transaction; each
    service takes its own locks: the parent tenant row, the parent's quota rows it carves from).
    Not idempotent: a second run is refused with the slug taken."""
    with transaction.atomic():
        with _step("tenant"):
            tenant = create_tenant(
                actor=actor,
                slug=plan.slug,
                display_name=plan.display_name,
                cost_centre=plan.cost_centre,
                parent_id=parent_id,
                namespaces=list(plan.namespaces),
            )
        for position, grant in enumerate(plan.quotas):
            with _step("quota", position):
                create_entry(
                    actor=actor,
                    model=Quota,
                    tenant=tenant,
                    flavor=Flavor.objects.get(pk=grant.flavor_id),
                    resource=grant.resource,
                    nominal=grant.nominal,
                )
        if plan.queue_name:
            with _step("queue"):
                strategy = {"strategy": plan.queue_strategy} if plan.queue_strategy else {}
                create_entry(actor=actor, model=Queue, tenant=tenant, name=plan.queue_name, **strategy)
        if plan.budget_ge_hours is not None:
            with _step("budget"):
                create_entry(
                    actor=actor,
                    model=Budget,
                    tenant=tenant,
                    flavor=Flavor.objects.get(pk=plan.budget_flavor_id) if plan.budget_flavor_id else None,
                    limit_ge_hours=plan.budget_ge_hours,
                    hard=plan.budget_hard,
                )
        for position, member in enumerate(plan.members):
            with _step("member", position):
                add_membership(actor=actor, tenant_id=tenant.pk, username=member.username, role=member.role)
    return tenant


@contextmanager
def _step(step: str, position: int | None = None) -> Iterator[None]:
    try:
        yield
    except DomainError as error:
        raise OnboardingRefused(step=step, error=error, position=position) from error
