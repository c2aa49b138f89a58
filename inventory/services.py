"""Writes to the inventory's configuration: clusters and dedicated pools (audited), sync leases.

Rows the sync derives from the cluster (nodes, units, allocations) are written by ``inventory.sync``.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from gpuplatform.accounts.models import User
from gpuplatform.audit.services import record_attempt, record_event, snapshot
from gpuplatform.errors import Conflict, Forbidden, NotFound, ValidationFailed
from gpuplatform.health.heartbeats import forget
from inventory.changed_hours import mark_changed_hours
from inventory.cluster_access import vet_uploaded
from inventory.crypto import encrypt_text
from inventory.kubeconfig import KubeconfigRefused, canonical_yaml
from inventory.models import Allocation, Cluster, EnforcementBackend, NodePool, sync_heartbeat_name
from inventory.ports import enforcement_backend_changed
from tenants.models import Tenant

CLUSTER_FIELDS = ("name", "api_endpoint", "in_cluster", "pool_label", "enforcement_backend")
NAMESPACE_MOVED = "namespace_moved"  # Allocation.end_reason of an interval split by reattribute_namespace
_UNSET: Any = object()


def _require_platform_admin(actor: User) -> None:
    if not actor.is_platform_admin:
        raise Forbidden("Only platform-admins manage clusters.")


def _check_backend(backend: str) -> None:
    if backend not in EnforcementBackend.values:
        raise ValidationFailed(
            f"Unknown enforcement backend {backend!r}; one of {', '.join(EnforcementBackend.values)}.",
            code="unknown_enforcement_backend",
            field="enforcement_backend",
        )


def _cluster_snapshot(cluster: Cluster) -> dict[str, Any]:
    # The kubeconfig is a secret: the audit log records that it changed, never its content.
    return {**snapshot(cluster, CLUSTER_FIELDS), "has_kubeconfig": bool(cluster.kubeconfig_encrypted)}


def _vetted(kubeconfig: str, *, actor: User, name: str, action: str) -> tuple[str, str]:
    """(endpoint, canonical kubeconfig) of an upload; a refusal is audited (committed on its own)
    and raised as a ValidationFailed with the vetting's stable code. Never echoes the upload."""
    try:
        vetted = vet_uploaded(kubeconfig)
    except KubeconfigRefused as refused:
        record_attempt(
            actor=actor,
            action=action,
            object_type="inventory.cluster",
            object_repr=name,
            detail={"code": refused.code, "reason": refused.message},
        )
        raise ValidationFailed(
            f"The kubeconfig is refused: {refused.message}.", code=refused.code, field="kubeconfig"
        ) from None
    return vetted.server, canonical_yaml(vetted)


def create_cluster(
    *,
    actor: User,
    name: str,
    kubeconfig: str = "",
    in_cluster: bool = False,
    pool_label: str = "",
    enforcement_backend: str = EnforcementBackend.RESOURCEQUOTA,
) -> Cluster:
    """Register a cluster (platform-admins). Not idempotent: a taken name is a Conflict."""
    _require_platform_admin(actor)
    _check_backend(enforcement_backend)
    if not kubeconfig and not in_cluster:
        raise ValidationFailed(
            "Give a kubeconfig or choose in-cluster credentials.", code="no_credentials", field="kubeconfig"
        )
    endpoint, stored = "https://kubernetes.default.svc", ""
    if kubeconfig:
        endpoint, stored = _vetted(kubeconfig, actor=actor, name=name, action="cluster.registration_refused")
    with transaction.atomic():
        cluster = Cluster(
            name=name,
            api_endpoint=endpoint,
            kubeconfig_encrypted=encrypt_text(stored),
            in_cluster=in_cluster,
            enforcement_backend=enforcement_backend,
            **({"pool_label": pool_label} if pool_label else {}),
        )
        try:
            with transaction.atomic():
                cluster.save(force_insert=True)
        except IntegrityError as exc:
            raise Conflict(
                f"A cluster named {name!r} exists.", code="cluster_name_taken", field="name"
            ) from exc
        record_event(actor=actor, action="cluster.created", obj=cluster, after=_cluster_snapshot(cluster))
        if cluster.enforcement_backend != EnforcementBackend.RESOURCEQUOTA:
            enforcement_backend_changed.send(
                sender=Cluster, cluster_id=str(cluster.pk), before="", after=cluster.enforcement_backend
            )
    return cluster


def update_cluster(
    *,
    actor: User,
    cluster_id: uuid.UUID | str,
    kubeconfig: str = _UNSET,
    in_cluster: bool = _UNSET,
    pool_label: str = _UNSET,
    enforcement_backend: str = _UNSET,
) -> Cluster:
    """Change credentials, the pool label or the enforcement backend. Locks the cluster row; no
    event when nothing changed."""
    _require_platform_admin(actor)
    if enforcement_backend is not _UNSET:
        _check_backend(enforcement_backend)
    replacement = None
    if kubeconfig is not _UNSET and kubeconfig:
        name = Cluster.objects.filter(pk=cluster_id).values_list("name", flat=True).first()
        if name is None:
            raise NotFound("No such cluster.", code="cluster_not_found")
        replacement = _vetted(kubeconfig, actor=actor, name=name, action="cluster.update_refused")
    with transaction.atomic():
        cluster = Cluster.objects.select_for_update().filter(pk=cluster_id).first()
        if cluster is None:
            raise NotFound("No such cluster.", code="cluster_not_found")
        before = _cluster_snapshot(cluster)
        changed_secret = False
        if replacement is not None:
            cluster.api_endpoint, stored = replacement
            cluster.kubeconfig_encrypted = encrypt_text(stored)
            changed_secret = True
        if in_cluster is not _UNSET:
            cluster.in_cluster = in_cluster
        if pool_label is not _UNSET:
            cluster.pool_label = pool_label
        switched = enforcement_backend is not _UNSET and enforcement_backend != cluster.enforcement_backend
        if enforcement_backend is not _UNSET:
            cluster.enforcement_backend = enforcement_backend
        cluster.save()
        if switched:
            enforcement_backend_changed.send(
                sender=Cluster,
                cluster_id=str(cluster.pk),
                before=before["enforcement_backend"],
                after=cluster.enforcement_backend,
            )
        after = _cluster_snapshot(cluster)
        if after != before or changed_secret:
            after["kubeconfig_replaced"] = changed_secret
            record_event(actor=actor, action="cluster.updated", obj=cluster, before=before, after=after)
    return cluster


def delete_cluster(*, actor: User, cluster_id: uuid.UUID | str) -> None:
    """Remove a cluster that never recorded an allocation (the ledger is kept for billing)."""
    _require_platform_admin(actor)
    with transaction.atomic():
        cluster = Cluster.objects.select_for_update().filter(pk=cluster_id).first()
        if cluster is None:
            raise NotFound("No such cluster.", code="cluster_not_found")
        if cluster.allocations.exists():
            raise Conflict(
                "The cluster has allocation history that billing needs.", code="cluster_has_history"
            )
        record_event(actor=actor, action="cluster.deleted", obj=cluster, before=_cluster_snapshot(cluster))
        cluster_pk = cluster.pk
        cluster.delete()
        forget(prefix=sync_heartbeat_name(cluster_pk))  # a removed cluster's sync is not stale: it is gone


def dedicate_pool(*, actor: User, pool_id: uuid.UUID | str, tenant_id: uuid.UUID | None) -> NodePool:
    """Dedicate a pool to a tenant (or share it again with None). Locks the pool row."""
    _require_platform_admin(actor)
    with transaction.atomic():
        pool = NodePool.objects.select_for_update().filter(pk=pool_id).first()
        if pool is None:
            raise NotFound("No such node pool.", code="pool_not_found")
        if tenant_id is not None and not Tenant.objects.filter(pk=tenant_id).exists():
            raise ValidationFailed("No such tenant.", code="tenant_not_found", field="tenant")
        before = {"tenant_id": str(pool.tenant_id) if pool.tenant_id else None}
        pool.tenant_id = tenant_id
        pool.save(update_fields=["tenant"])
        after = {"tenant_id": str(tenant_id) if tenant_id else None}
        if before != after:
            record_event(actor=actor, action="node_pool.updated", obj=pool, before=before, after=after)
    return pool


def claim_sync_lease(*, cluster_id: uuid.UUID | str, owner: str, seconds: int) -> bool:
    """Claim the right to sync a cluster by conditional UPDATE: False means another worker holds it.
    Idempotent for the same owner (renews)."""
    now = timezone.now()
    claimed = (
        Cluster.objects.filter(pk=cluster_id)
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now) | Q(lease_owner=owner))
        .update(lease_owner=owner, lease_until=now + timedelta(seconds=seconds))
    )
    return claimed == 1


def release_sync_lease(*, cluster_id: uuid.UUID | str, owner: str) -> None:
    """Give the lease back (only if still ours)."""
    Cluster.objects.filter(pk=cluster_id, lease_owner=owner).update(lease_owner="", lease_until=None)


def reattribute_namespace(
    *, cluster_name: str, namespace: str, tenant_id: uuid.UUID | None, at: datetime
) -> int:
    """A namespace moved to another tenant (or to none): its open allocations on the clusters the
    mapping covers (``cluster_name`` "" = every cluster) end at ``at`` and reopen for the new owner
    from ``at``, so usage splits at the moment of the change, not at the next resync. Locks the open
    rows; idempotent (rows already held for that tenant are left alone). Returns the rows reopened.

    Called by tenants when namespace ownership changes (tenants/services.py), in its transaction."""
    with transaction.atomic():
        rows = Allocation.objects.select_for_update().filter(namespace=namespace, ended_at__isnull=True)
        if cluster_name:
            rows = rows.filter(cluster__name=cluster_name)
        moving = [
            row
            for row in rows.exclude(tenant_id=tenant_id).order_by("pk")
            if tenant_id is not None or row.tenant_id is not None
        ]
        for row in moving:
            row.ended_at = max(at, row.started_at)
            row.end_reason = NAMESPACE_MOVED
        Allocation.objects.bulk_update(moving, ["ended_at", "end_reason"])
        reopened = [
            Allocation(
                cluster_id=row.cluster_id,
                tenant_id=tenant_id,
                namespace=row.namespace,
                holder_kind=row.holder_kind,
                holder_name=row.holder_name,
                holder_uid=row.holder_uid,
                unit_key=row.unit_key,
                resource_name=row.resource_name,
                count=row.count,
                ge=row.ge,
                model_key=row.model_key,
                details={**row.details, "reattributed_from": str(row.pk)},
                node_name=row.node_name,
                node_id=row.node_id,
                pool_id=row.pool_id,
                gpu_id=row.gpu_id,
                unit_id=row.unit_id,
                claim_id=row.claim_id,
                started_at=row.ended_at,
            )
            for row in moving
        ]
        Allocation.objects.bulk_create(reopened)
        for cluster_id in sorted({row.cluster_id for row in moving}):
            mark_changed_hours(cluster_id=cluster_id, times=[at])
    return len(reopened)
