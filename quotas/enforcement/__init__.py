"""Enforcement backends behind one port (ports.py): ``resourcequota`` (ResourceQuota per tenant
namespace, ResourceClaims for DRA) and ``kueue`` (the quota tree compiled into Kueue's objects)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from quotas.enforcement.kueue import KueueBackend
from quotas.enforcement.ports import EnforcementBackend
from quotas.enforcement.resourcequota import ResourceQuotaBackend

if TYPE_CHECKING:
    from inventory.models import Cluster

BACKENDS: dict[str, EnforcementBackend] = {
    backend.name: backend for backend in (ResourceQuotaBackend(), KueueBackend())
}


def backend_for(cluster: Cluster) -> EnforcementBackend:
    """The backend the cluster names; an unknown name (a row written around the service) is a
    KeyError rather than a silent fallback that would write objects the cluster is not meant to get."""
    return BACKENDS[cluster.enforcement_backend]


__all__ = ["BACKENDS", "EnforcementBackend", "backend_for"]
