"""Entry points for adapters (task, commands, demo): sync one cluster once, or keep it synced."""

from __future__ import annotations

import os
import socket
import threading
import uuid
from typing import Any

from inventory.kube import KubeError
from inventory.models import Cluster
from inventory.services import claim_sync_lease, release_sync_lease
from inventory.sync.runner import ClusterSync, record_sync_failure

LEASE_SECONDS = 900


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"[:64]


def sync_cluster(*, cluster_id: uuid.UUID | str, api: Any = None) -> dict[str, Any]:
    """List every kind and reconcile, under the cluster's sync lease (conditional UPDATE).
    Idempotent: a repeat changes nothing unless the cluster changed; returns the changes (drift)."""
    owner = _owner()
    if not claim_sync_lease(cluster_id=cluster_id, owner=owner, seconds=LEASE_SECONDS):
        return {"skipped": "another worker is syncing this cluster"}
    try:
        cluster = Cluster.objects.get(pk=cluster_id)
        try:
            syncer = ClusterSync(cluster, api=api)
        except KubeError as exc:
            # Credentials that no longer pass vetting: shown in the cluster's health, never used.
            record_sync_failure(cluster=cluster, error=exc)
            return {"error": str(exc)}
        report = syncer.full_sync()
        return {"changes": report.changes, "objects": report.objects, "drift": report.drift}
    finally:
        release_sync_lease(cluster_id=cluster_id, owner=owner)


def keep_synced(*, cluster: Cluster, stop: threading.Event, resync_seconds: float | None = None) -> None:
    """List, then watch until ``stop`` is set (re-lists on 410, resyncs periodically)."""
    syncer = ClusterSync(cluster)
    syncer.stop_event = stop
    syncer.run(resync_seconds=resync_seconds)
