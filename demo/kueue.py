"""The demo's second cluster, ``demo-kueue``: a small kubesim with Kueue v0.19.2's CRDs and its Kueue
stand-in (kubesim/controllers/kueue/), enforced through Kueue (docs/kueue.md). gpuplatform compiles
and applies its quota tree there; tenants submit Jobs labelled with their LocalQueue, as they would
with kubectl, and Kueue (the stand-in) reserves quota for them in their ClusterQueues.

The demo's Jobs are chosen to show gpuplatform's admission check at work (issue 28, items 5 and 9):
two within quota and budget (admitted once the check says Ready), one over recsys's GE-hour budget
(held, Retry) and one above the flavor's approval threshold (waiting for an admin above vision).
The check's controller itself is quotas' (``CHECK_TASK``); the demo only calls it, if it is there
(``decide_admission_checks``), so the Workloads wait on the check until it is.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

import kubesim
from gpuplatform.accounts.models import User
from gpuplatform.celery import app as celery_app
from inventory.models import Cluster, EnforcementBackend, NodePool, Workload
from inventory.services import create_cluster, update_cluster
from quotas.models import Budget, Flavor, Quota
from quotas.services.catalogue import create_entry
from tenants.models import Tenant

log = logging.getLogger(__name__)

KUEUE_CLUSTER = "demo-kueue"
KUEUE_SCENARIO = "exclusive"  # H100, L40S and A100 pools, one GPU per pod, no sharing
KUEUE_NODES = 6  # three H100 nodes of 8 GPUs, two L40S, one A100
POOL = "NVIDIA-H100-80GB-HBM3"
FLAVOR = "h100-kueue"
APPROVAL_ABOVE = 4  # a Workload of more than 4 H100s waits for an admin above its tenant
QUOTAS = {"vision": 8, "nlp": 8, "recsys": 4}  # H100s nominal, per tenant, on demo-kueue
BUDGET_TENANT, BUDGET_GE_HOURS = "recsys", Decimal(10)  # hard, on h100-kueue
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
MAX_EXEC_LABEL = "kueue.x-k8s.io/max-exec-time-seconds"
# gpuplatform's admission-check controller (issue 28 item 5), a Celery task per cluster, called by
# its stable name: absent until that work is merged, then the demo decides its Workloads at start.
CHECK_TASK = "quotas.check_kueue_workloads"


@dataclass(frozen=True)
class DemoJob:
    namespace: str
    name: str
    gpus: int
    hours: int | None  # Kueue's maximum execution time; None: gpuplatform counts its default duration
    shows: str


JOBS = (
    DemoJob("team-vision", "detector-train", 2, 4, "admitted: 2 GE x 4 h = 8 GE-h, within budget"),
    DemoJob("team-nlp", "finetune-sweep", 4, 2, "admitted: 4 GE x 2 h = 8 GE-h, within budget"),
    DemoJob(
        "team-recsys",
        "embedding-rebuild",
        2,
        None,
        "held by the budget check: 2 GE x the default 24 h = 48 GE-h, over recsys's 10 GE-h",
    ),
    DemoJob(
        "team-vision",
        "large-eval",
        6,
        1,
        f"waits for approval: 6 H100s is above {FLAVOR}'s approval threshold of {APPROVAL_ABOVE}",
    ),
)


def start_kueue_sim(*, kubeconfig_path: Path) -> kubesim.Sim:
    """The simulated cluster, its kubeconfig written to ``kubeconfig_path`` (kept after the demo)."""
    return kubesim.start(
        scenario=KUEUE_SCENARIO,
        nodes=KUEUE_NODES,
        seed=1,
        # The Kueue stand-in alone: the demo's Jobs need no pods, and a second data plane's ticks would
        # compete with the server for the interpreter.
        controllers=["kueue"],
        kueue=True,
        kubeconfig_path=kubeconfig_path,
    )


def seed_kueue_cluster(*, kubeconfig: str) -> Cluster:
    """Register ``demo-kueue`` enforced through Kueue (or re-point it: the port changes per run)."""
    admin = User.objects.get(username="admin")
    existing = Cluster.objects.filter(name=KUEUE_CLUSTER).first()
    if existing is None:
        return create_cluster(
            actor=admin,
            name=KUEUE_CLUSTER,
            kubeconfig=kubeconfig,
            enforcement_backend=EnforcementBackend.KUEUE,
        )
    return update_cluster(actor=admin, cluster_id=existing.pk, kubeconfig=kubeconfig)


def seed_kueue_catalogue(*, cluster: Cluster) -> bool:
    """The H100 flavor of ``demo-kueue``, quotas for three teams and recsys's budget, once (after the
    first sync found the pool); False when already there. Each write queues the cluster's apply."""
    if Flavor.objects.filter(name=FLAVOR).exists():
        return False
    pool = NodePool.objects.filter(cluster=cluster, name=POOL).first()
    if pool is None:
        log.warning("demo-kueue: no pool %s yet; its catalogue is seeded on the next start", POOL)
        return False
    admin = User.objects.get(username="admin")
    flavor = create_entry(
        actor=admin,
        model=Flavor,
        name=FLAVOR,
        pool=pool,
        kind="device-plugin",
        resources=[{"name": "nvidia.com/gpu", "ge_per_unit": "1"}],
        approval_above=APPROVAL_ABOVE,
        gpu_model=POOL,
    )
    tenants = {t.slug: t for t in Tenant.objects.filter(slug__in=QUOTAS)}
    for slug, nominal in QUOTAS.items():
        create_entry(
            actor=admin,
            model=Quota,
            tenant=tenants[slug],
            flavor=flavor,
            resource="nvidia.com/gpu",
            nominal=nominal,
        )
    create_entry(
        actor=admin,
        model=Budget,
        tenant=tenants[BUDGET_TENANT],
        flavor=flavor,
        limit_ge_hours=BUDGET_GE_HOURS,
        hard=True,
    )
    return True


def job_manifest(job: DemoJob) -> dict[str, Any]:
    """A suspended Job naming its LocalQueue, as a tenant submits it for Kueue to admit."""
    labels = {
        QUEUE_LABEL: "default",
        PRIORITY_LABEL: "batch",
        "app.kubernetes.io/part-of": "gpuplatform-demo",
    }
    if job.hours is not None:
        labels[MAX_EXEC_LABEL] = str(job.hours * 3600)
    gpus = str(job.gpus)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": job.name, "namespace": job.namespace, "labels": labels},
        "spec": {
            "suspend": True,
            "parallelism": 1,
            "completions": 1,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.example/train:1",
                            "resources": {
                                "requests": {"nvidia.com/gpu": gpus},
                                "limits": {"nvidia.com/gpu": gpus},
                            },
                        }
                    ],
                }
            },
        },
    }


def submit_demo_jobs(*, api_client: Any) -> list[str]:
    """The tenants' Jobs, each submitted once per simulated cluster (a 409 is one already there)."""
    batch: Any = k8s.BatchV1Api(api_client)  # plain dicts in, as a tenant's manifest
    submitted = []
    for job in JOBS:
        try:
            batch.create_namespaced_job(job.namespace, job_manifest(job))
        except k8s.ApiException as error:
            if error.status != 409:
                raise
        submitted.append(f"{job.namespace}/{job.name}")
    return submitted


def decide_admission_checks(*, cluster_id: str) -> bool:
    """INTEGRATION HOOK (issue 28 item 5): run gpuplatform's admission-check controller for the
    cluster now, so the demo opens with its Workloads decided rather than after the first beat.
    Calls ``CHECK_TASK`` if registered (it is once the check's controller is merged; its beat entry
    and the sync's trigger then keep deciding while the demo runs); False when it is not there."""
    task = celery_app.tasks.get(CHECK_TASK)
    if task is None:
        return False
    task.apply(args=(str(cluster_id),), throw=True)
    return True


def decide_when_synced(*, cluster: Cluster, stop: threading.Event, timeout: float = 60.0) -> threading.Thread:
    """A thread that waits until the sync has seen a Workload for each demo Job, then calls the
    admission-check hook once."""

    def run() -> None:
        deadline = time.monotonic() + timeout
        while not stop.is_set() and time.monotonic() < deadline:
            if Workload.objects.filter(cluster=cluster, present=True).count() >= len(JOBS):
                break
            stop.wait(1.0)
        try:
            decide_admission_checks(cluster_id=str(cluster.pk))
        except Exception:  # the demo serves on; the check's own beat entry retries
            log.exception("demo-kueue: deciding the admission checks failed")

    return threading.Thread(target=run, name="demo-kueue-checks", daemon=True)
