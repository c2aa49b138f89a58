"""The ``kueue`` backend: Kueue admits workloads against ClusterQueues compiled from the quota tree
(quotas/kueue/), so nothing is written per request: no ResourceQuota (Kueue's quota is the one that
counts; a ResourceQuota beside it would be a second system that disagrees) and no ResourceClaim
(Kueue workloads bring their own claim templates). Applying the compiled objects is a job per
cluster, not per request (docs/kueue.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inventory.models import Cluster
    from quotas.models import CapacityRequest


class KueueBackend:
    name = "kueue"

    def apply_request(
        self, *, api: Any, request: CapacityRequest, namespace: str, cluster: Cluster
    ) -> list[dict[str, Any]]:
        slug = request.tenant.slug
        return [
            {
                "kind": "ClusterQueue",
                "name": slug,
                "written": False,
                "summary": (
                    f"Nothing written per request: cluster {cluster.name} enforces through Kueue "
                    f"(ClusterQueue {slug})."
                ),
            }
        ]

    def writes_resource_quotas(self) -> bool:
        return False
