"""The ``kueue`` backend: Kueue admits workloads against ClusterQueues compiled from the quota tree
(quotas/kueue/), so nothing is written per request: no ResourceQuota (Kueue's quota is the one that
counts; a ResourceQuota beside it would be a second system that disagrees) and no ResourceClaim
(Kueue workloads bring their own claim templates). A request that holds capacity is a temporary
raise of its tenant's ClusterQueue nominal quota, written by the cluster's Kueue apply (a job per
cluster, queued beside this materialisation; quotas/kueue/grants.py, docs/kueue.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from quotas.models.requests import HOLDING

if TYPE_CHECKING:
    from inventory.models import Cluster
    from quotas.models import CapacityRequest


class KueueBackend:
    name = "kueue"

    def apply_request(
        self, *, api: Any, request: CapacityRequest, namespace: str, cluster: Cluster
    ) -> list[dict[str, Any]]:
        slug = request.tenant.slug
        held = request.state in HOLDING
        effect = "raises" if held else "no longer raises"
        return [
            {
                "kind": "ClusterQueue",
                "name": slug,
                "written": False,
                "summary": (
                    f"Nothing written per request: cluster {cluster.name} enforces through Kueue; the "
                    f"request {effect} ClusterQueue {slug}'s nominal quota."
                ),
            }
        ]

    def writes_resource_quotas(self) -> bool:
        return False
