"""Making the cluster enforce what was granted, with server-side apply through ``inventory.kube``.

Device-plugin flavors: one ResourceQuota per tenant namespace, ``gpuplatform-gpus``, whose
``requests.<resource>`` is the total the tenant holds of that resource on that cluster, for every
device-plugin resource of the cluster's flavors (0 when it holds none: the quota is what stops pods
from taking GPUs they were not granted). Each pool has a resource name of its own once its sharing
policy is published (policies app), so each pool is enforced separately. DRA flavors: one
ResourceClaim per admitted request, deleted when the request ends. Reconciling totals (not applying
deltas) makes every run idempotent.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from gpuplatform.db.locks import LockSpace, lock_name
from inventory import kube
from inventory.cluster_access import client_for
from inventory.models import Cluster
from quotas.lifecycle import ActorKind, Event, Move, move_requests
from quotas.models import CapacityRequest, Flavor, FlavorKind
from quotas.models.requests import HOLDING, RequestState
from tenants.models import TenantNamespace

QUOTA_NAME = "gpuplatform-gpus"
DEFAULT_GPU_RESOURCE = "nvidia.com/gpu"
LABELS = {"app.kubernetes.io/managed-by": "gpuplatform"}


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


def claim_name(request_id: uuid.UUID) -> str:
    return f"gpuplatform-{request_id.hex[:16]}"


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
        if request.flavor.kind == FlavorKind.DRA:
            applied = _claim(api, request, namespace)
        else:
            applied = _quota(api, request, namespace, cluster)
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


def _quota(api: Any, request: CapacityRequest, namespace: str, cluster: Cluster) -> list[dict[str, Any]]:
    """Reconcile the namespace's ResourceQuota to the totals the tenant holds on this cluster.

    Every device-plugin resource name of the cluster's flavors is listed, at 0 where the tenant holds
    none: a ResourceQuota only limits the names it lists, so a pool's name left out would let the
    namespace take that pool's GPUs freely. Once each pool advertises a name of its own (the pool's
    sharing policy renames its flavors' resources), each pool is held apart here."""
    # nvidia.com/gpu always: every stock device plugin advertises it, and a node still does until its
    # agent applies the pool's renamed config; a namespace holding none of it gets 0, not "unlimited".
    resources = {DEFAULT_GPU_RESOURCE, *request.flavor.resource_names}
    for names in Flavor.objects.filter(kind=FlavorKind.DEVICE_PLUGIN, pool__cluster=cluster).values_list(
        "resources", flat=True
    ):
        resources.update(str(r["name"]) for r in names)
    totals: dict[str, int] = defaultdict(int)
    held = CapacityRequest.objects.filter(
        tenant_id=request.tenant_id,
        state__in=HOLDING,
        flavor__kind=FlavorKind.DEVICE_PLUGIN,
        flavor__pool__cluster=cluster,
    ).values_list("amounts", flat=True)
    for amounts in held:
        for r, a in amounts.items():
            totals[r] += int(a)
            resources.add(r)
    hard = {f"requests.{r}": str(totals.get(r, 0)) for r in sorted(resources)}
    kube.apply_resource_quota(api, namespace=namespace, name=QUOTA_NAME, hard=hard, labels=LABELS)
    text = ", ".join(f"{k}={v}" for k, v in hard.items())
    return [
        {
            "kind": "ResourceQuota",
            "namespace": namespace,
            "name": QUOTA_NAME,
            "hard": hard,
            "summary": f"ResourceQuota {namespace}/{QUOTA_NAME} set to {text}.",
        }
    ]


def _claim(api: Any, request: CapacityRequest, namespace: str) -> list[dict[str, Any]]:
    name = claim_name(request.pk)
    if request.state in HOLDING:
        count = sum(int(a) for a in request.amounts.values())
        kube.apply_resource_claim(
            api,
            namespace=namespace,
            name=name,
            device_class=request.flavor.device_class,
            count=count,
            labels={**LABELS, "gpuplatform.dev/request": str(request.pk)},
        )
        return [
            {
                "kind": "ResourceClaim",
                "namespace": namespace,
                "name": name,
                "summary": f"ResourceClaim {namespace}/{name} applied for {count} device(s).",
            }
        ]
    kube.delete_resource_claim(api, namespace=namespace, name=name)
    return [
        {
            "kind": "ResourceClaim",
            "namespace": namespace,
            "name": name,
            "deleted": True,
            "summary": f"ResourceClaim {namespace}/{name} removed.",
        }
    ]


def _note(request: CapacityRequest, message: str) -> None:
    if message not in request.message:
        CapacityRequest.objects.filter(pk=request.pk).update(message=f"{request.message} {message}".strip())
