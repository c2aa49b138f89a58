"""Writes to tenant identity: the tree, memberships, namespaces. Each writes its audit event in the
same transaction and locks what it reads to decide (DESIGN §6)."""

from __future__ import annotations

import fnmatch
import uuid
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, ProtectedError, Value
from django.db.models.functions import Concat, Substr
from django.utils import timezone

from gpuplatform.accounts.models import User
from gpuplatform.audit.services import record_event, snapshot
from gpuplatform.errors import Conflict, Forbidden, NotFound, ValidationFailed
from tenants import scoping
from tenants.models import Membership, Role, Tenant, TenantNamespace, TenantState
from tenants.signals import namespace_owner_changed, tenant_state_changed

TENANT_FIELDS = ("slug", "display_name", "cost_centre", "namespace_prefix", "state", "parent_id")
MEMBERSHIP_FIELDS = ("tenant_id", "user_id", "role")
MAX_DEPTH = 12


def _visible_tenant(actor: User, tenant_id: uuid.UUID | str, *, lock: bool = False) -> Tenant:
    queryset = Tenant.objects.visible_to(actor)
    if lock:
        queryset = queryset.select_for_update()
    tenant = queryset.filter(pk=tenant_id).first()
    if tenant is None:
        raise NotFound("No such tenant.", code="tenant_not_found")
    return tenant


def _tenant_snapshot(tenant: Tenant) -> dict[str, Any]:
    data = snapshot(tenant, TENANT_FIELDS)
    data["namespaces"] = [str(ns) for ns in tenant.namespaces.all()]
    return data


def _check_assignable(actor: User, tenant: Tenant, namespaces: set[tuple[str, str]]) -> None:
    """Namespaces say whose pods are billed and where quota objects are applied, so only a
    platform-admin assigns them, or a tenant-admin within a prefix a platform-admin set on the tenant
    or above it; system namespaces (kube-*, the GPU Operator's...) are never a tenant's."""
    for _, namespace in sorted(namespaces):
        if any(fnmatch.fnmatchcase(namespace, pattern) for pattern in settings.SYSTEM_NAMESPACES):
            raise ValidationFailed(
                f"Namespace {namespace!r} is a system namespace and belongs to no tenant.",
                code="system_namespace",
                field="namespaces",
            )
    if actor.is_platform_admin:
        return
    prefixes = [
        prefix
        for prefix in Tenant.objects.filter(path__in=tenant.lineage_paths).values_list(
            "namespace_prefix", flat=True
        )
        if prefix
    ]
    for _, namespace in sorted(namespaces):
        if not any(namespace.startswith(prefix) for prefix in prefixes):
            raise Forbidden(
                "Only platform-admins assign namespaces here"
                + (
                    f"; tenant-admins may assign ones starting with {' or '.join(sorted(prefixes))}."
                    if prefixes
                    else "."
                ),
                code="namespace_not_delegated",
            )


def _set_namespaces(actor: User, tenant: Tenant, namespaces: list[tuple[str, str]]) -> None:
    wanted = {(cluster, namespace) for cluster, namespace in namespaces}
    current_keys = {(ns.cluster, ns.namespace) for ns in tenant.namespaces.all()}
    # Only what changes needs the right: removing one's own namespace is not assigning one.
    _check_assignable(actor, tenant, wanted - current_keys)
    clashes = (
        TenantNamespace.objects.exclude(tenant=tenant)
        .filter(namespace__in=[ns for _, ns in wanted])
        .select_related("tenant")
    )
    for clash in clashes:
        # '' means every cluster, so it clashes with the same name on any cluster.
        if any(
            ns == clash.namespace and (cl == clash.cluster or "" in (cl, clash.cluster)) for cl, ns in wanted
        ):
            raise Conflict(
                f"Namespace {clash} already belongs to another tenant.",
                code="namespace_taken",
                field="namespaces",
            )
    current = {(ns.cluster, ns.namespace): ns for ns in tenant.namespaces.all()}
    removed, added = sorted(set(current) - wanted), sorted(wanted - set(current))
    TenantNamespace.objects.filter(pk__in=[current[key].pk for key in removed]).delete()
    TenantNamespace.objects.bulk_create(
        [TenantNamespace(tenant=tenant, cluster=cl, namespace=ns) for cl, ns in added]
    )
    now = timezone.now()
    for (cluster, namespace), owner in [
        *((key, None) for key in removed),
        *((key, tenant.pk) for key in added),
    ]:
        namespace_owner_changed.send(
            sender=TenantNamespace, cluster=cluster, namespace=namespace, tenant_id=owner, at=now
        )


def create_tenant(
    *,
    actor: User,
    slug: str,
    display_name: str,
    parent_id: uuid.UUID | None = None,
    cost_centre: str = "",
    namespace_prefix: str = "",
    state: str = TenantState.ACTIVE,
    namespaces: list[tuple[str, str]] | None = None,
) -> Tenant:
    """Create a tenant under ``parent_id`` (a root when None: platform-admins only). Locks the parent
    row so a concurrent move cannot turn the new branch into a cycle."""
    with transaction.atomic():
        parent = None
        if parent_id is not None:
            parent = _visible_tenant(actor, parent_id, lock=True)
            if not scoping.can_manage(actor, parent):
                raise Forbidden(
                    "Only a tenant-admin of the parent (or a platform-admin) may add tenants here."
                )
            if parent.depth + 1 > MAX_DEPTH:
                raise ValidationFailed(f"The tenant tree is at most {MAX_DEPTH} levels deep.", field="parent")
        elif not actor.is_platform_admin:
            raise Forbidden("Only platform-admins create top-level tenants.")
        if namespace_prefix and not actor.is_platform_admin:
            raise Forbidden("Only platform-admins delegate namespace prefixes.", code="set_from_above")
        if Tenant.objects.filter(slug=slug).exists():
            raise Conflict(f"The slug {slug!r} is taken.", code="slug_taken", field="slug")
        tenant_id = uuid.uuid4()
        tenant = Tenant(
            id=tenant_id,
            parent=parent,
            path=Tenant.path_for(tenant_id, parent.path if parent else None),
            depth=(parent.depth + 1) if parent else 0,
            slug=slug,
            display_name=display_name,
            cost_centre=cost_centre,
            namespace_prefix=namespace_prefix,
            state=state,
            created_by_tenant_admin=not actor.is_platform_admin,
        )
        try:
            with transaction.atomic():
                tenant.save(force_insert=True)
        except IntegrityError as exc:
            raise Conflict(f"The slug {slug!r} is taken.", code="slug_taken", field="slug") from exc
        if namespaces:
            _set_namespaces(actor, tenant, namespaces)
        record_event(
            actor=actor,
            action="tenant.created",
            obj=tenant,
            after=_tenant_snapshot(tenant),
            tenant_id=tenant.pk,
        )
    return tenant


_UNSET: Any = object()


def update_tenant(
    *,
    actor: User,
    tenant_id: uuid.UUID | str,
    display_name: str = _UNSET,
    cost_centre: str = _UNSET,
    namespace_prefix: str = _UNSET,
    state: str = _UNSET,
    slug: str = _UNSET,
    parent_id: uuid.UUID | None = _UNSET,
    namespaces: list[tuple[str, str]] = _UNSET,
) -> Tenant:
    """Change a tenant's fields; a new parent moves its whole subtree. Locks the tenant and the new
    parent in path order (the same order every writer uses, so two moves cannot deadlock)."""
    with transaction.atomic():
        tenant = _visible_tenant(actor, tenant_id)
        if not scoping.can_manage(actor, tenant):
            raise Forbidden("You may view this tenant but not change it.")
        new_parent = None
        if parent_id is not _UNSET and parent_id is not None:
            # An invisible parent answers as an absent one, even when it is the current parent.
            _visible_tenant(actor, parent_id)
        moving = parent_id is not _UNSET and parent_id != tenant.parent_id
        if moving:
            if not scoping.can_manage_strictly_below(actor, tenant):
                raise Forbidden("Only a platform-admin may move the top tenant you administer.")
            if parent_id is not None:
                new_parent = _visible_tenant(actor, parent_id)
            elif not actor.is_platform_admin:
                raise Forbidden("Only platform-admins create top-level tenants.")
        lock_ids = [tenant.pk] + ([new_parent.pk] if new_parent else [])
        locked = {
            t.pk: t for t in Tenant.objects.select_for_update().filter(pk__in=lock_ids).order_by("path")
        }
        tenant = locked[tenant.pk]
        before = _tenant_snapshot(tenant)
        if moving:
            _move(actor=actor, tenant=tenant, new_parent=locked[new_parent.pk] if new_parent else None)
        if slug is not _UNSET and slug != tenant.slug:
            if Tenant.objects.filter(slug=slug).exclude(pk=tenant.pk).exists():
                raise Conflict(f"The slug {slug!r} is taken.", code="slug_taken", field="slug")
            tenant.slug = slug
        if display_name is not _UNSET:
            tenant.display_name = display_name
        # Who pays and whether the tenant may run are decided from above it: a tenant-admin of vision
        # neither bills vision to another cost centre nor lifts a suspension a platform-admin set.
        from_above = scoping.can_manage_strictly_below(actor, tenant)
        for name, value, current in (
            ("cost_centre", cost_centre, tenant.cost_centre),
            ("state", state, tenant.state),
        ):
            if value is not _UNSET and value != current and not from_above:
                raise Forbidden(
                    f"A tenant's {name.replace('_', ' ')} is set by an admin above it or a platform-admin.",
                    code="set_from_above",
                )
        if namespace_prefix is not _UNSET and namespace_prefix != tenant.namespace_prefix:
            if not actor.is_platform_admin:
                raise Forbidden("Only platform-admins delegate namespace prefixes.", code="set_from_above")
            tenant.namespace_prefix = namespace_prefix
        state_changed = state is not _UNSET and state != tenant.state
        if cost_centre is not _UNSET:
            tenant.cost_centre = cost_centre
        if state is not _UNSET:
            tenant.state = state
        tenant.save()
        if state_changed:
            tenant_state_changed.send(sender=Tenant, tenant_id=tenant.pk, state=tenant.state)
        if namespaces is not _UNSET:
            _set_namespaces(actor, tenant, namespaces)
        after = _tenant_snapshot(tenant)
        if after != before:
            record_event(
                actor=actor,
                action="tenant.updated",
                obj=tenant,
                before=before,
                after=after,
                tenant_id=tenant.pk,
            )
    return tenant


def _move(*, actor: User, tenant: Tenant, new_parent: Tenant | None) -> None:
    if new_parent is not None:
        if new_parent.path.startswith(tenant.path):
            raise ValidationFailed(
                "A tenant cannot be moved under itself or one of its descendants.",
                code="tenant_cycle",
                field="parent",
            )
        if not scoping.can_manage(actor, new_parent):
            raise Forbidden("You may only move tenants under tenants you administer.")
    old_path = tenant.path
    new_path = Tenant.path_for(tenant.pk, new_parent.path if new_parent else None)
    depth_delta = (new_parent.depth + 1 if new_parent else 0) - tenant.depth
    deepest = (
        Tenant.objects.filter(path__startswith=old_path)
        .order_by("-depth")
        .values_list("depth", flat=True)
        .first()
    )
    if deepest is not None and deepest + depth_delta > MAX_DEPTH:
        raise ValidationFailed(f"The tenant tree is at most {MAX_DEPTH} levels deep.", field="parent")
    # One statement rewrites the prefix of every path in the subtree, the moved tenant included.
    Tenant.objects.filter(path__startswith=old_path).update(
        path=Concat(Value(new_path), Substr("path", len(old_path) + 1)), depth=F("depth") + depth_delta
    )
    tenant.refresh_from_db(fields=["path", "depth"])
    scoping.forget_memberships()  # admin paths below the moved tenant changed
    tenant.parent = new_parent


def delete_tenant(*, actor: User, tenant_id: uuid.UUID | str) -> None:
    """Delete an empty tenant (no children, no members). Locks the tenant row."""
    with transaction.atomic():
        tenant = _visible_tenant(actor, tenant_id, lock=True)
        if not scoping.can_manage_strictly_below(actor, tenant):
            raise Forbidden("Only a platform-admin may delete the top tenant you administer.")
        if tenant.children.exists():
            raise Conflict(
                "The tenant still has child tenants; move or delete them first.", code="tenant_not_empty"
            )
        if tenant.memberships.exists():
            raise Conflict("The tenant still has members; remove them first.", code="tenant_not_empty")
        before = _tenant_snapshot(tenant)
        record_event(actor=actor, action="tenant.deleted", obj=tenant, before=before, tenant_id=tenant.pk)
        try:
            with transaction.atomic():
                tenant.delete()
                scoping.forget_memberships()
        except ProtectedError as exc:
            # Quotas, queues, budgets and capacity requests keep their tenant (PROTECT): history stays.
            raise Conflict(
                "The tenant still has quotas, queues, budgets or capacity requests.", code="tenant_not_empty"
            ) from exc


def add_membership(*, actor: User, tenant_id: uuid.UUID | str, username: str, role: str) -> Membership:
    """Give ``username`` a role in the tenant. Tenant-admins of the tenant's subtree, platform-admins."""
    with transaction.atomic():
        tenant = _visible_tenant(actor, tenant_id, lock=True)
        if not scoping.can_manage(actor, tenant):
            raise Forbidden("Only a tenant-admin (or a platform-admin) may manage members.")
        if role not in Role.values:
            raise ValidationFailed(f"Unknown role {role!r}.", field="role")
        user = User.objects.filter(username=username, is_active=True).first()
        if user is None:
            raise ValidationFailed(f"No active user named {username!r}.", code="unknown_user", field="user")
        if Membership.objects.filter(tenant=tenant, user=user).exists():
            raise Conflict(f"{username} is already a member of {tenant.slug}.", code="duplicate_membership")
        membership = Membership.objects.create(tenant=tenant, user=user, role=role)
        scoping.forget_memberships()
        record_event(
            actor=actor,
            action="membership.created",
            obj=membership,
            after=snapshot(membership, MEMBERSHIP_FIELDS),
        )
    return membership


def _manageable_membership(actor: User, membership_id: uuid.UUID | str) -> Membership:
    membership = (
        Membership.objects.visible_to(actor).select_for_update().select_related("tenant", "user")
    ).filter(pk=membership_id)
    found = membership.first()
    if found is None:
        raise NotFound("No such membership.")
    if not scoping.can_manage(actor, found.tenant):
        raise Forbidden("Only a tenant-admin (or a platform-admin) may manage members.")
    if found.user_id == actor.pk and not actor.is_platform_admin:
        raise Forbidden(
            "You cannot change your own membership; ask another tenant-admin.", code="own_membership"
        )
    return found


def change_membership_role(*, actor: User, membership_id: uuid.UUID | str, role: str) -> Membership:
    """Change a member's role. Locks the membership row."""
    with transaction.atomic():
        membership = _manageable_membership(actor, membership_id)
        if role not in Role.values:
            raise ValidationFailed(f"Unknown role {role!r}.", field="role")
        before = snapshot(membership, MEMBERSHIP_FIELDS)
        if membership.role != role:
            membership.role = role
            membership.save(update_fields=["role"])
            scoping.forget_memberships()
            record_event(
                actor=actor,
                action="membership.updated",
                obj=membership,
                before=before,
                after=snapshot(membership, MEMBERSHIP_FIELDS),
            )
    return membership


def remove_membership(*, actor: User, membership_id: uuid.UUID | str) -> None:
    """Remove a membership. Locks the membership row."""
    with transaction.atomic():
        membership = _manageable_membership(actor, membership_id)
        record_event(
            actor=actor,
            action="membership.deleted",
            obj=membership,
            before=snapshot(membership, MEMBERSHIP_FIELDS),
        )
        membership.delete()
        scoping.forget_memberships()
