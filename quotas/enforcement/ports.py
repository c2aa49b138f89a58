"""The enforcement port (DESIGN §5.3): how a cluster is made to hold tenants to what they were granted.

Each cluster names one backend (``Cluster.enforcement_backend``); quotas asks the backend for the
cluster and never branches on the name itself, so Volcano and KAI can follow as backends without
touching the engine or the request lifecycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from inventory.models import Cluster
    from quotas.models import CapacityRequest


class EnforcementBackend(Protocol):
    name: str

    def apply_request(
        self, *, api: Any, request: CapacityRequest, namespace: str, cluster: Cluster
    ) -> list[dict[str, Any]]:
        """Make the cluster enforce what ``request`` holds now: apply, lower or remove what the
        backend writes for it. Idempotent; runs under the namespace's advisory lock, inside the
        transaction that records the result. Returns one record per object (``kind``, ``name``,
        ``summary``, …), kept on the request as ``cluster_objects``."""
        ...

    def writes_resource_quotas(self) -> bool:
        """Whether this backend owns the namespaces' ResourceQuotas on its clusters."""
        ...
