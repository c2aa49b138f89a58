"""The ``resourcequota`` backend: one ResourceQuota per tenant namespace holding the device-plugin
totals the tenant holds on the cluster, and one ResourceClaim per admitted DRA request (deleted when
the request ends), written with server-side apply (field manager ``gpuplatform``)."""

from __future__ import annotations

import uuid
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from inventory import kube
from quotas.models import CapacityRequest, Flavor, FlavorKind
from quotas.models.requests import HOLDING

if TYPE_CHECKING:
    from inventory.models import Cluster

QUOTA_NAME = "gpuplatform-gpus"
DEFAULT_GPU_RESOURCE = "nvidia.com/gpu"
LABELS = {"app.kubernetes.io/managed-by": "gpuplatform"}


def claim_name(request_id: uuid.UUID) -> str:
    return f"gpuplatform-{request_id.hex[:16]}"


class ResourceQuotaBackend:
    name = "resourcequota"

    def apply_request(
        self, *, api: Any, request: CapacityRequest, namespace: str, cluster: Cluster
    ) -> list[dict[str, Any]]:
        if request.flavor.kind == FlavorKind.DRA:
            return _claim(api, request, namespace)
        return _quota(api, request, namespace, cluster)

    def writes_resource_quotas(self) -> bool:
        return True


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
