"""Writes to the capacity catalogue: flavors, priority classes, quotas, budgets and queues.

Flavors and priority classes are platform objects (platform-admins). Quotas and budgets are set from
above: a platform-admin, or a tenant-admin for tenants strictly below the one it administers (nobody
raises their own quota). Queues belong to their tenant (its tenant-admins). Every change writes its
audit event in the same transaction and queues the admission loop: pending requests may fit now.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any, TypeVar

from django.db import IntegrityError, models, transaction

from gpuplatform.accounts.models import User
from gpuplatform.audit.services import record_event, snapshot
from gpuplatform.errors import Conflict, Forbidden, NotFound, ValidationFailed
from quotas.dispatch import admission_loop_after_commit
from quotas.models import Budget, Flavor, PriorityClass, Queue, Quota
from quotas.models.catalogue import BorrowWithinCohort
from tenants import scoping
from tenants.models import Tenant

M = TypeVar("M", bound=models.Model)

FIELDS: dict[type[models.Model], tuple[str, ...]] = {
    Flavor: (
        "name",
        "display_name",
        "kind",
        "pool_id",
        "gpu_model",
        "resources",
        "device_class",
        "approval_above",
        "tenant_id",
    ),
    PriorityClass: ("name", "value", "preemptible", "description", "tenant_id"),
    Quota: ("tenant_id", "flavor_id", "resource", "nominal", "borrowing_limit", "lending_limit"),
    Budget: ("tenant_id", "flavor_id", "limit_ge_hours", "hard"),
    Queue: (
        "tenant_id",
        "name",
        "strategy",
        "weight",
        "within_tenant",
        "reclaim_within_cohort",
        "borrow_within_cohort",
        "max_priority_threshold",
        "when_can_borrow",
        "when_can_preempt",
    ),
}
ACTION = {Flavor: "flavor", PriorityClass: "priority_class", Quota: "quota", Budget: "budget", Queue: "queue"}


def _check_rights(actor: User, model: type[models.Model], tenant: Tenant | None) -> None:
    if model in (Flavor, PriorityClass):
        if not actor.is_platform_admin:
            raise Forbidden("Only platform-admins manage flavors and priority classes.")
    elif model in (Quota, Budget):
        if tenant is None or not scoping.can_manage_strictly_below(actor, tenant):
            raise Forbidden(
                "Quotas and budgets are set by a tenant-admin above this tenant or a platform-admin."
            )
    elif tenant is None or not scoping.can_manage(actor, tenant):
        raise Forbidden("Only tenant-admins of this tenant (or above) manage its queues.")


QUEUE_DEFAULT_WEIGHT = Decimal(1)
# What a queue may take from relatives: set from above its tenant, as its weight is. The defaults are
# Kueue's (reclaim from any borrowing relative, never preempt them while borrowing).
RELATIVES_POLICY = {
    "reclaim_within_cohort": "Any",
    "borrow_within_cohort": "Never",
    "max_priority_threshold": None,
}


def _check_weight_from_above(actor: User, tenant: Tenant | None) -> None:
    """A queue's weight scales its tenant's fair share of the cohort, and its reclaim and
    borrow-within-cohort policy decide what it may take from relatives, so they are set from above
    the tenant (the tenant's own admins keep the defaults)."""
    if tenant is None or not scoping.can_manage_strictly_below(actor, tenant):
        raise Forbidden(
            "A queue's weight and what it may preempt of relatives are set by an admin above its tenant "
            "or a platform-admin.",
            code="set_from_above",
        )


def _carve_from_parent(*, actor: User, quota: Quota, delta: int) -> None:
    """What a tenant-admin grants below comes out of what it was granted: the parent's nominal of the
    same flavor and resource shrinks by what the child gains (and grows back by what it gives up), so
    the subtree's total stays what an admin above set. Platform-admins set quotas as they see fit.
    Locks the parent's quota row; audited."""
    if actor.is_platform_admin or delta == 0:
        return
    parent_id = Tenant.objects.filter(pk=quota.tenant_id).values_list("parent_id", flat=True).first()
    parent_quota = (
        Quota.objects.select_for_update()
        .filter(tenant_id=parent_id, flavor_id=quota.flavor_id, resource=quota.resource)
        .first()
        if parent_id is not None
        else None
    )
    if parent_quota is None or parent_quota.nominal < delta:
        held = parent_quota.nominal if parent_quota is not None else 0
        raise ValidationFailed(
            f"A child's quota comes out of its parent's: the parent holds {held} of {quota.resource} on "
            f"this flavor, and {delta} more was asked for.",
            code="exceeds_parent_quota",
            field="nominal",
        )
    before = snapshot(parent_quota, FIELDS[Quota])
    parent_quota.nominal -= delta
    parent_quota.save(update_fields=["nominal"])
    record_event(
        actor=actor,
        action="quota.updated",
        obj=parent_quota,
        before=before,
        after={**snapshot(parent_quota, FIELDS[Quota]), "carved_for": str(quota.tenant_id)},
        tenant_id=parent_quota.tenant_id,
    )


def _validate(obj: models.Model) -> None:
    if isinstance(obj, Quota) and obj.resource not in obj.flavor.resource_names:
        raise ValidationFailed(
            f"Flavor {obj.flavor.name!r} has no resource {obj.resource!r}.",
            code="unknown_resource",
            field="resource",
        )
    if (
        isinstance(obj, Queue)
        and obj.max_priority_threshold is not None
        and obj.borrow_within_cohort != BorrowWithinCohort.LOWER_PRIORITY
    ):
        raise ValidationFailed(
            "max_priority_threshold applies only with borrow_within_cohort LowerPriority.",
            code="max_priority_threshold_without_borrowing",
            field="max_priority_threshold",
        )
    if isinstance(obj, Flavor):
        if not obj.resources:
            raise ValidationFailed("A flavor counts at least one resource.", field="resources")
        if obj.kind == "dra" and not obj.device_class:
            raise ValidationFailed("A DRA flavor names its DeviceClass.", field="device_class")


def _tenant_of(obj: models.Model) -> Tenant | None:
    tenant_id = getattr(obj, "tenant_id", None)
    if isinstance(obj, Flavor | PriorityClass) or tenant_id is None:
        return None
    return Tenant.objects.get(pk=tenant_id)


def _save(obj: models.Model, *, conflict: str) -> None:
    try:
        with transaction.atomic():
            obj.save()
    except IntegrityError as exc:
        raise Conflict(f"{type(obj).__name__} already exists.", code=conflict) from exc


def create_entry(*, actor: User, model: type[M], **values: Any) -> M:
    """Create a catalogue row (rights per model above), audited; not idempotent (a duplicate is a
    Conflict). Queues the admission loop after commit."""
    obj = model(**values)
    _check_rights(actor, model, _tenant_of(obj))
    if isinstance(obj, Queue) and (
        Decimal(str(obj.weight)) != QUEUE_DEFAULT_WEIGHT
        or any(getattr(obj, f) != v for f, v in RELATIVES_POLICY.items())
    ):
        _check_weight_from_above(actor, _tenant_of(obj))
    with transaction.atomic():
        _validate(obj)
        if isinstance(obj, Quota):
            _carve_from_parent(actor=actor, quota=obj, delta=obj.nominal)
        _save(obj, conflict=f"{ACTION[model]}_exists")
        record_event(
            actor=actor,
            action=f"{ACTION[model]}.created",
            obj=obj,
            after=snapshot(obj, FIELDS[model]),
            tenant_id=getattr(obj, "tenant_id", None),
        )
        admission_loop_after_commit()
    return obj


def update_entry(*, actor: User, model: type[M], pk: uuid.UUID | str, **values: Any) -> M:
    """Change a catalogue row; locks it (FOR UPDATE) so concurrent edits audit a true before."""
    with transaction.atomic():
        obj = model._default_manager.order_by().select_for_update(of=("self",)).filter(pk=pk).first()
        if obj is None:
            raise NotFound("Not found.")
        _check_rights(actor, model, _tenant_of(obj))
        before = snapshot(obj, FIELDS[model])
        if isinstance(obj, Quota) and not actor.is_platform_admin:
            # A tenant-admin's grant moves within its subtree; which tenant holds it is fixed.
            if {"tenant", "tenant_id", "flavor", "flavor_id", "resource"} & set(values):
                raise Forbidden("Only platform-admins move a quota to another tenant or flavor.")
            _carve_from_parent(actor=actor, quota=obj, delta=values.get("nominal", obj.nominal) - obj.nominal)
        for field, value in values.items():
            setattr(obj, field, value)
        _check_rights(actor, model, _tenant_of(obj))  # a move must land where the actor may manage too
        if isinstance(obj, Queue):
            after = snapshot(obj, ("weight", *RELATIVES_POLICY))
            if any(before[f] != after[f] for f in after):
                _check_weight_from_above(actor, _tenant_of(obj))
        _validate(obj)
        _save(obj, conflict=f"{ACTION[model]}_exists")
        record_event(
            actor=actor,
            action=f"{ACTION[model]}.updated",
            obj=obj,
            before=before,
            after=snapshot(obj, FIELDS[model]),
            tenant_id=getattr(obj, "tenant_id", None),
        )
        admission_loop_after_commit()
    return obj


def delete_entry(*, actor: User, model: type[M], pk: uuid.UUID | str) -> None:
    """Delete a catalogue row; one still referenced by requests is a Conflict (PROTECT)."""
    with transaction.atomic():
        obj = model._default_manager.order_by().select_for_update(of=("self",)).filter(pk=pk).first()
        if obj is None:
            raise NotFound("Not found.")
        _check_rights(actor, model, _tenant_of(obj))
        before = snapshot(obj, FIELDS[model])
        if isinstance(obj, Quota):
            _carve_from_parent(actor=actor, quota=obj, delta=-obj.nominal)  # given back to the parent
        record_event(
            actor=actor,
            action=f"{ACTION[model]}.deleted",
            obj=obj,
            before=before,
            tenant_id=getattr(obj, "tenant_id", None),
        )
        try:
            with transaction.atomic():
                obj.delete()
        except models.ProtectedError as exc:
            raise Conflict("Still in use by requests or quotas.", code=f"{ACTION[model]}_in_use") from exc
        admission_loop_after_commit()
