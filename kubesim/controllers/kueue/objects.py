"""Kueue's names, labels, reasons and object shapes (v1beta2), and the helpers that build them.

Taken from Kueue v0.19.2 (apis/kueue/v1beta2, pkg/controller/jobframework, pkg/workload) with its
default feature gates: in particular UnadmittedWorkloadsObservability is off, so a Workload waiting
for quota carries QuotaReserved=False with reason "Pending" (or "Inadmissible" for a queue problem),
and no Admitted condition until it is admitted.
"""

from __future__ import annotations

import copy
import hashlib
from decimal import Decimal
from typing import Any

from kubesim.controllers.kueue.quota import ZERO, amount
from kubesim.quantity import canonical

GROUP = "kueue.x-k8s.io"
API_VERSION = "kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
MAX_EXEC_TIME_LABEL = "kueue.x-k8s.io/max-exec-time-seconds"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
PODSET_LABEL = "kueue.x-k8s.io/podset"
LOCAL_QUEUE_LABEL = "kueue.x-k8s.io/local-queue-name"
CLUSTER_QUEUE_LABEL = "kueue.x-k8s.io/cluster-queue-name"
FINALIZER = "kueue.x-k8s.io/resource-in-use"
DEFAULT_PODSET = "main"
# Field managers as Kueue's writes appear in managedFields: the admission status through
# server-side apply as "kueue-admission", everything else as the manager binary ("kueue").
ADMISSION_MANAGER = "kueue-admission"
MANAGER = "kueue"
COMPONENT = "kueue-admission"

# Condition types and reasons (workload_types.go).
QUOTA_RESERVED = "QuotaReserved"
ADMITTED = "Admitted"
EVICTED = "Evicted"
PREEMPTED = "Preempted"
REQUEUED = "Requeued"
FINISHED = "Finished"
DEACTIVATION_TARGET = "DeactivationTarget"
REASON_PENDING = "Pending"
REASON_INADMISSIBLE = "Inadmissible"
EVICTED_BY_ADMISSION_CHECK = "AdmissionCheck"
EVICTED_BY_PREEMPTION = "Preempted"
DEACTIVATED = "Deactivated"
BACKOFF_FINISHED = "BackoffFinished"
IN_CLUSTER_QUEUE = "InClusterQueue"

PENDING, READY, RETRY, REJECTED = "Pending", "Ready", "Retry", "Rejected"

KUEUE_PLURALS = (
    "workloads",
    "clusterqueues",
    "localqueues",
    "cohorts",
    "resourceflavors",
    "admissionchecks",
    "workloadpriorityclasses",
)


# ------------------------------------------------------------------------------------------ conditions


def find(conditions: list[dict[str, Any]] | None, kind: str) -> dict[str, Any] | None:
    return next((c for c in conditions or [] if c.get("type") == kind), None)


def is_true(obj: dict[str, Any], kind: str) -> bool:
    cond = find((obj.get("status") or {}).get("conditions"), kind)
    return cond is not None and cond.get("status") == "True"


def set_condition(
    conditions: list[dict[str, Any]],
    kind: str,
    status: bool,
    reason: str,
    message: str,
    *,
    now: str,
    generation: int | None = None,
) -> None:
    """apimeta.SetStatusCondition: lastTransitionTime moves only when the status changes."""
    value = "True" if status else "False"
    current = find(conditions, kind)
    if current is None:
        current = {"type": kind, "lastTransitionTime": now}
        conditions.append(current)
    elif current.get("status") != value:
        current["lastTransitionTime"] = now
    current.update(status=value, reason=reason, message=message[: 32 * 1024])
    if generation is not None:
        current["observedGeneration"] = generation
    else:
        current.pop("observedGeneration", None)


def remove_condition(conditions: list[dict[str, Any]], kind: str) -> None:
    conditions[:] = [c for c in conditions if c.get("type") != kind]


# ------------------------------------------------------------------------------------- workload names


def workload_name(job_name: str, job_uid: str, kind: str = "Job", group: str = "batch") -> str:
    """jobframework.GetWorkloadNameForOwnerWithGVK: `<kind>-<name>` (at most 247 characters), a dash,
    and the first 5 hex digits of sha1(kind \\n group \\n name \\n uid)."""
    digest = hashlib.sha1(f"{kind}\n{group}\n{job_name}\n{job_uid}".encode(), usedforsecurity=False)
    prefix = f"{kind.lower()}-{job_name}"[: 253 - 1 - 5]
    return f"{prefix}-{digest.hexdigest()[:5]}"


# --------------------------------------------------------------------------------------------- requests


def pod_requests(pod_spec: dict[str, Any]) -> dict[str, Decimal]:
    """What one pod counts against quota: containers summed, each init container a floor, plus
    overhead (resource.PodRequests); a container's limit stands in for a missing request."""

    def of(container: dict[str, Any]) -> dict[str, Decimal]:
        resources = container.get("resources") or {}
        merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        return {name: amount(value) for name, value in merged.items()}

    total: dict[str, Decimal] = {}
    for container in pod_spec.get("containers") or []:
        for name, value in of(container).items():
            total[name] = total.get(name, ZERO) + value
    for container in pod_spec.get("initContainers") or []:
        for name, value in of(container).items():
            total[name] = max(total.get(name, ZERO), value)
    for name, value in (pod_spec.get("overhead") or {}).items():
        total[name] = total.get(name, ZERO) + amount(value)
    return {name: value for name, value in total.items() if value > 0}


def podset_requests(podset: dict[str, Any]) -> dict[str, Decimal]:
    per_pod = pod_requests(((podset.get("template") or {}).get("spec")) or {})
    count = Decimal(int(podset.get("count", 1)))
    return {name: value * count for name, value in per_pod.items()}


def format_amount(resource: str, value: Decimal) -> str:
    """As Kueue writes a ResourceList: memory-like resources in binary units, others decimal."""
    binary = resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-")
    if binary and value == value.to_integral_value() and int(value) % 1024 == 0:
        return canonical(f"{int(value) // 1024}Ki")
    if value == value.to_integral_value():
        return canonical(str(int(value)))
    return canonical(f"{int((value * 1000).to_integral_value())}m")


# --------------------------------------------------------------------------------------------- shapes


def job_finished(job: dict[str, Any]) -> tuple[bool, bool, str]:
    """(finished, succeeded, message) from the Job's Complete/Failed conditions (job.Finished)."""
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return True, cond["type"] != "Failed", cond.get("message", "")
    return False, True, ""


def job_podset_count(job: dict[str, Any]) -> int:
    spec = job.get("spec") or {}
    count = int(spec.get("parallelism", 1))
    completions = spec.get("completions")
    return min(count, int(completions)) if completions is not None else count


def new_workload(job: dict[str, Any], priority_class: dict[str, Any] | None) -> dict[str, Any]:
    """The Workload jobframework.ConstructWorkload makes for a batch/v1 Job."""
    meta = job["metadata"]
    labels = meta.get("labels") or {}
    template = copy.deepcopy((job.get("spec") or {}).get("template") or {})
    spec: dict[str, Any] = {
        "queueName": labels.get(QUEUE_LABEL, ""),
        "podSets": [{"name": DEFAULT_PODSET, "template": template, "count": job_podset_count(job)}],
    }
    if priority_class is not None:
        spec["priorityClassRef"] = {
            "group": GROUP,
            "kind": "WorkloadPriorityClass",
            "name": priority_class["metadata"]["name"],
        }
        spec["priority"] = int(priority_class.get("value", 0))
    max_exec = labels.get(MAX_EXEC_TIME_LABEL, "")
    if max_exec.isdigit() and int(max_exec) > 0:
        spec["maximumExecutionTimeSeconds"] = int(max_exec)
    return {
        "apiVersion": API_VERSION,
        "kind": "Workload",
        "metadata": {
            "name": workload_name(meta["name"], meta["uid"]),
            "namespace": meta["namespace"],
            "labels": {JOB_UID_LABEL: meta["uid"]},
            "finalizers": [FINALIZER],
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
    }


def admission_flavors(workload: dict[str, Any]) -> set[str]:
    admission = (workload.get("status") or {}).get("admission") or {}
    return {
        f for psa in admission.get("podSetAssignments") or [] for f in (psa.get("flavors") or {}).values()
    }


def admission_usage(workload: dict[str, Any]) -> dict[tuple[str, str], Decimal]:
    """(flavor, resource) -> amount the Workload's admission holds."""
    out: dict[tuple[str, str], Decimal] = {}
    admission = (workload.get("status") or {}).get("admission") or {}
    for psa in admission.get("podSetAssignments") or []:
        flavors = psa.get("flavors") or {}
        for resource, value in (psa.get("resourceUsage") or {}).items():
            if resource in flavors:
                key = (flavors[resource], resource)
                out[key] = out.get(key, ZERO) + amount(value)
    return out


def checks_message(checks: list[dict[str, Any]], state: str) -> str:
    """buildAdmissionChecksMessage: `AdmissionCheck(s) in <state> state: "a" (msg); "b"`."""
    parts = []
    for check in sorted(checks, key=lambda c: c.get("name", "")):
        name = '"' + check.get("name", "") + '"'
        parts.append(f"{name} ({check['message']})" if check.get("message") else name)
    noun = "AdmissionChecks" if len(checks) > 1 else "AdmissionCheck"
    return f"{noun} in {state} state: {'; '.join(parts)}"
