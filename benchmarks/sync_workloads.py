"""Kueue Workloads for the sync benchmark's cluster (``inventory_sync.py --workloads N``).

Shaped as Kueue v0.19 writes them: the spec is kubesim's ``new_workload`` (jobframework's
ConstructWorkload for a batch/v1 Job: owner reference, finalizer, job-uid label, one pod set with the
Job's template), the status as Kueue's controllers leave it. Half are admitted (QuotaReserved and
Admitted true, an admission with flavors and resource usage, gpuplatform's budget check Ready), a
third wait for quota (QuotaReserved false, reason Pending, Kueue's "insufficient unused quota"
message, resource requests), the rest have quota reserved and wait on gpuplatform's budget check.

How many: a Workload exists per Job that is queued, admitted or running. The 5,000-node scenario
has 40,000 GPUs; at 4 GPUs per Job (the mix below averages ~4) about 10,000 Jobs are admitted when
the fleet is full, and a backlog of as many again waits: 20,000, four per node.
"""

from __future__ import annotations

import random
import uuid
from typing import Any

# (pods, GPUs per pod): mostly single-node jobs, some multi-node; ~4 GPUs per job on average.
SHAPES = [(1, 1), (1, 2), (1, 4), (1, 8), (1, 8), (2, 8), (1, 1), (1, 2)]
PRIORITIES = [("batch", 100), ("standard", 500), ("prod", 1000)]
WHEN = "2026-01-06T10:00:00Z"


def _job(rng: random.Random, index: int, namespace: str, pods: int, gpus: int) -> dict[str, Any]:
    priority = rng.choice(PRIORITIES)[0]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"train-{index:06d}",
            "namespace": namespace,
            "uid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            "labels": {"kueue.x-k8s.io/queue-name": "gpu", "kueue.x-k8s.io/priority-class": priority},
        },
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "template": {
                "metadata": {"labels": {"app": f"train-{index:06d}"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "main",
                            "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                            "resources": {
                                "limits": {
                                    "nvidia.com/gpu": str(gpus),
                                    "cpu": str(8 * gpus),
                                    "memory": f"{64 * gpus}Gi",
                                },
                                "requests": {
                                    "nvidia.com/gpu": str(gpus),
                                    "cpu": str(8 * gpus),
                                    "memory": f"{64 * gpus}Gi",
                                },
                            },
                        }
                    ],
                },
            },
        },
    }


def _condition(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": WHEN,
        "observedGeneration": 1,
    }


def _status(rng: random.Random, namespace: str, pods: int, gpus: int) -> dict[str, Any]:
    usage = {
        "nvidia.com/gpu": str(pods * gpus),
        "cpu": str(8 * gpus * pods),
        "memory": f"{64 * gpus * pods}Gi",
    }
    admission = {
        "clusterQueue": namespace.removeprefix("team-"),
        "podSetAssignments": [
            {
                "name": "main",
                "flavors": {"nvidia.com/gpu": "h100", "cpu": "default", "memory": "default"},
                "resourceUsage": usage,
                "count": pods,
            }
        ],
    }
    queue = admission["clusterQueue"]
    reserved = _condition("QuotaReserved", "True", "QuotaReserved", f"Quota reserved in ClusterQueue {queue}")
    roll = rng.random()
    if roll < 0.5:
        return {
            "admission": admission,
            "conditions": [reserved, _condition("Admitted", "True", "Admitted", "The workload is admitted")],
            "admissionChecks": [_budget_check("Ready", "within budget")],
        }
    if roll < 0.83:
        return {
            "conditions": [
                _condition(
                    "QuotaReserved",
                    "False",
                    "Pending",
                    "couldn't assign flavors to pod set main: insufficient unused quota for "
                    f"nvidia.com/gpu in flavor h100, {pods * gpus} more needed",
                )
            ],
            "resourceRequests": [{"name": "main", "resources": usage}],
        }
    waiting = _budget_check("Pending", "")
    return {"admission": admission, "conditions": [reserved], "admissionChecks": [waiting]}


def _budget_check(state: str, message: str) -> dict[str, Any]:
    """gpuplatform's admission check on the Workload, as Kueue keeps its state."""
    return {"name": "gpuplatform-budget", "state": state, "message": message, "lastTransitionTime": WHEN}


def workload_objects(*, count: int, namespaces: list[str], seed: int) -> list[dict[str, Any]]:
    """``count`` Workloads spread over ``namespaces``, the same for a seed (kubesim assigns uids)."""
    from kubesim.controllers.kueue.objects import new_workload

    rng = random.Random(seed)
    objects = []
    for index in range(count):
        namespace = namespaces[index % len(namespaces)]
        pods, gpus = rng.choice(SHAPES)
        job = _job(rng, index, namespace, pods, gpus)
        priority = next(
            p for p in PRIORITIES if p[0] == job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"]
        )
        workload = new_workload(job, {"metadata": {"name": priority[0]}, "value": priority[1]})
        workload["metadata"]["creationTimestamp"] = WHEN
        workload["status"] = _status(rng, namespace, pods, gpus)
        objects.append(workload)
    return objects
