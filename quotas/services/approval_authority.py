"""Who may approve a request that crossed an approval threshold, and over which subtree the threshold
counts (docs/admission.md, "Approval").

A tenant-admin may make children inside its subtree and put anyone in them, so a child it made
cannot be what a threshold governs: alice, admin of vision, would make vision-sec, add erin, and
approve erin's requests as "an admin above vision-sec". The threshold governs the lowest tenant on
the request's lineage that a platform-admin set up, raised to the highest tenant there the requester
administers (so spreading requests over children does not split them). Approval must come from an
admin strictly above that tenant, or a platform-admin, and never from the requester.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence

from gpuplatform.accounts.models import User
from quotas.models import CapacityRequest
from tenants import scoping
from tenants.models import Membership, Role, Tenant


def _governing(lineage: list[str], *, platform_made: set[str], requester_roots: Iterable[str]) -> str:
    # ``lineage`` runs from the root down; a root is always platform-made (only platform-admins make
    # roots), so the first candidate below always exists.
    governing = next((p for p in reversed(lineage) if p in platform_made), lineage[0])
    roots = set(requester_roots)
    highest_own = next((p for p in lineage if p in roots), None)
    if highest_own is not None and len(highest_own) < len(governing):
        governing = highest_own
    return governing


def _platform_made(paths: Iterable[str]) -> set[str]:
    return set(
        Tenant.objects.filter(path__in=set(paths), created_by_tenant_admin=False).values_list(
            "path", flat=True
        )
    )


def governing_tenant(*, tenant: Tenant, requester: User | None) -> Tenant:
    """The tenant whose subtree a request of ``requester`` in ``tenant`` is counted over."""
    lineage = tenant.lineage_paths
    path = _governing(
        lineage,
        platform_made=_platform_made(lineage),
        requester_roots=scoping.admin_root_paths(requester) if requester is not None else (),
    )
    return tenant if path == tenant.path else Tenant.objects.get(path=path)


def governing_paths(requests: Sequence[CapacityRequest]) -> dict[uuid.UUID, str]:
    """``governing_tenant``'s path for many requests in two queries (the approval inbox)."""
    lineages = {r.pk: r.tenant.lineage_paths for r in requests}
    platform_made = _platform_made(p for lineage in lineages.values() for p in lineage)
    requesters = {r.created_by_id for r in requests if r.created_by_id is not None}
    roots: dict[int, list[str]] = {}
    admins = Membership.objects.filter(user_id__in=requesters, role=Role.TENANT_ADMIN)
    for user_id, path in admins.values_list("user_id", "tenant__path"):
        roots.setdefault(user_id, []).append(path)
    return {
        r.pk: _governing(
            lineages[r.pk],
            platform_made=platform_made,
            requester_roots=roots.get(r.created_by_id, []) if r.created_by_id is not None else [],
        )
        for r in requests
    }


def may_approve(actor: User, request: CapacityRequest, governing_path: str) -> bool:
    """Not the requester; a platform-admin, or an admin of a tenant strictly above the governing one."""
    if request.created_by_id == actor.pk:
        return False
    return may_approve_below(actor, governing_path)


def may_approve_below(actor: User, governing_path: str) -> bool:
    """A platform-admin, or an admin of a tenant strictly above the governing one (a Kueue Workload
    has no requester gpuplatform knows; its namespace's admins are at or below the tenant)."""
    if actor.is_platform_admin:
        return True
    return any(
        governing_path.startswith(path) and governing_path != path for path in scoping.admin_root_paths(actor)
    )
