"""Celery tasks of the inventory: thin wrappers over the sync."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from inventory.sync.service import sync_cluster


@shared_task(name="inventory.sync_cluster")
def sync_cluster_task(cluster_id: str) -> dict[str, Any]:
    """One full list-and-reconcile of a cluster; idempotent, skipped while another worker holds it."""
    return sync_cluster(cluster_id=cluster_id)
