"""Making the cluster enforce what was granted: the request's lifecycle around the cluster's
enforcement backend (quotas/enforcement/), which writes the objects.

The ``resourcequota`` backend (quotas/enforcement/resourcequota.py), server-side apply through
``inventory.kube``: device-plugin flavors: one ResourceQuota per tenant namespace, ``gpuplatform-gpus``, whose
``requests.<resource>`` is the total the tenant holds of that resource on that cluster, for every
device-plugin resource of the cluster's flavors (0 when it holds none: the quota is what stops pods
from taking GPUs they were not granted). Each pool has a resource name of its own once its sharing
policy is published (policies app), so each pool is enforced separately. DRA flavors: one
ResourceClaim per admitted request, deleted when the request ends. Reconciling totals (not applying
deltas) makes every run idempotent. The ``kueue`` backend writes nothing per request.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from gpuplatform.db.locks import LockSpace, lock_name
from inventory.cluster_access import client_for
from inventory.models import Cluster
from quotas.enforcement import backend_for
from quotas.enforcement.resourcequota import DEFAULT_GPU_RESOURCE, LABELS, QUOTA_NAME, claim_name
from quotas.lifecycle import ActorKind, Event, Move, move_requests
from quotas.models import CapacityRequest
from quotas.models.requests import HOLDING, RequestState
from tenants.models import TenantNamespace


def _api(cluster: Cluster) -> Any:
    return client_for(cluster)


def namespace_of(*, tenant_id: uuid.UUID, cluster: Cluster) -> str | None:
    row = (
        TenantNamespace.objects.filter(tenant_id=tenant_id)
        .filter(Q(cluster=cluster.name) | Q(cluster=""))
        .order_by("-cluster", "namespace")
        .first()
    )
    return row.namespace if row else None


def materialise_request(*, request_id: uuid.UUID | str) -> dict[str, Any]:
    """Apply, lower or remove the cluster objects of one request; an admitted request becomes active.
    Idempotent. Holds a per-namespace advisory lock across read-and-apply so two runs for one
    namespace cannot apply stale totals out of order."""
    request = (
        CapacityRequest.objects.select_related("flavor__pool__cluster", "tenant")
        .filter(pk=request_id)
        .first()
    )
    if request is None or request.flavor.pool is None:
        return {"applied": []}
    cluster = request.flavor.pool.cluster
    namespace = namespace_of(tenant_id=request.tenant_id, cluster=cluster)
    if namespace is None:
        _note(
            request,
            f"Not materialised: {request.tenant.slug!r} owns no namespace on cluster {cluster.name!r}.",
        )
        return {"applied": []}
    api = _api(cluster)
    with transaction.atomic():
        lock_name(LockSpace.QUOTA_NAMESPACE, f"{cluster.pk}/{namespace}")
        request.refresh_from_db(fields=["state", "message"])
        applied = backend_for(cluster).apply_request(
            api=api, request=request, namespace=namespace, cluster=cluster
        )
        now = timezone.now()
        if request.state == RequestState.ADMITTED:
            # Claimed on the admitted state: a release or preemption that got in first wins.
            move = Move(
                request=request,
                event=Event.MATERIALISE,
                by=ActorKind.SYSTEM,
                reason_code="materialised",
                message="; ".join(o["summary"] for o in applied),
                explains=False,
                changes={"active_at": now, "cluster_objects": applied},
            )
            move_requests(moves=[move], now=now, claim=True)
        elif request.state not in HOLDING:
            summary = "; ".join(o["summary"] for o in applied)
            if summary and summary not in request.message:
                CapacityRequest.objects.filter(pk=request.pk).update(
                    message=f"{request.message} {summary}".strip(), cluster_objects=applied, updated_at=now
                )
    return {"applied": applied}


def _note(request: CapacityRequest, message: str) -> None:
    if message not in request.message:
        CapacityRequest.objects.filter(pk=request.pk).update(message=f"{request.message} {message}".strip())


__all__ = [
    "DEFAULT_GPU_RESOURCE",
    "LABELS",
    "QUOTA_NAME",
    "claim_name",
    "materialise_request",
    "namespace_of",
]
