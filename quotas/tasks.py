"""Celery tasks of quotas: thin wrappers, taking ids, idempotent, with stable names."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from inventory.models import Cluster, EnforcementBackend
from quotas.kueue_apply.service import apply_kueue
from quotas.kueue_apply.triggers import queue_kueue_apply
from quotas.kueue_check.service import check_kueue_workloads, queue_check
from quotas.materialise import materialise_request
from quotas.runner.loop import run_admission_loop


@shared_task(name="quotas.materialise_request")
def materialise_request_task(request_id: str) -> dict[str, Any]:
    """Apply, lower or remove one request's cluster objects; safe to run twice."""
    return materialise_request(request_id=request_id)


@shared_task(name="quotas.materialise_requests")
def materialise_requests_task(request_ids: list[str]) -> dict[str, Any]:
    """The requests one decision moved, in one message: each is tried, each safe to run twice; if any
    failed, the task fails after trying the rest, and a retry redoes only what is still undone."""
    done, failed = {}, []
    for request_id in request_ids:
        try:
            done[request_id] = materialise_request(request_id=request_id)
        except Exception as exc:  # re-raised below, once the others had their turn
            failed.append(exc)
    if failed:
        raise failed[0]
    return done


@shared_task(name="quotas.run_admission_loop")
def run_admission_loop_task() -> dict[str, Any]:
    """Expire ended requests and decide every cohort with pending requests again."""
    return run_admission_loop()


@shared_task(name="quotas.apply_kueue")
def apply_kueue_task(cluster_id: str) -> dict[str, Any]:
    """Make one cluster's Kueue objects what the catalogue compiles to (or remove ours from a
    resourcequota cluster); safe to run twice."""
    return apply_kueue(cluster_id=cluster_id)


@shared_task(name="quotas.reconcile_kueue_clusters")
def reconcile_kueue_clusters_task() -> list[str]:
    """Queue the apply of every kueue cluster: drift made by hand is repaired within a period."""
    ids = [
        str(pk)
        for pk in Cluster.objects.filter(enforcement_backend=EnforcementBackend.KUEUE).values_list(
            "pk", flat=True
        )
    ]
    for cluster_id in ids:
        queue_kueue_apply(cluster_id=cluster_id)
    return ids


@shared_task(name="quotas.check_kueue_workloads")
def check_kueue_workloads_task(cluster_id: str) -> dict[str, Any]:
    """Decide the Workloads waiting on gpuplatform's admission check on one cluster; safe to run
    twice (a Workload already decided and reserved is told Ready again, never reserved twice)."""
    return check_kueue_workloads(cluster_id=cluster_id)


@shared_task(name="quotas.check_kueue_clusters")
def check_kueue_clusters_task() -> list[str]:
    """Queue the check pass of every kueue cluster: approvals given, budgets raised and Retry
    requeues are picked up within a period."""
    ids = [
        str(pk)
        for pk in Cluster.objects.filter(enforcement_backend=EnforcementBackend.KUEUE).values_list(
            "pk", flat=True
        )
    ]
    for cluster_id in ids:
        queue_check(cluster_id=cluster_id)
    return ids
