"""A Kueue Workload (kueue.x-k8s.io/v1beta2) read into what the inventory keeps and the pages say.

Pure and defensive, as every parser of cluster objects here: a field missing or of the wrong shape
gives a default, never an error. The state follows Kueue's conditions in the order they win:
Finished, then Evicted (an eviction Kueue has not yet cleared), Admitted, QuotaReserved; else pending.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inventory.domain.raw_fields import as_int, as_list, as_map, as_str, dig

PENDING, QUOTA_RESERVED, ADMITTED, EVICTED, FINISHED = (
    "pending",
    "quota_reserved",
    "admitted",
    "evicted",
    "finished",
)
BUDGET_CHECK = "gpuplatform-budget"  # the AdmissionCheck gpuplatform answers for (quotas/kueue/model.py)


@dataclass(frozen=True, slots=True)
class PodSet:
    name: str
    count: int
    requests: dict[str, str]  # per pod, summed over its containers (as Kueue counts them)


@dataclass(frozen=True, slots=True)
class ParsedWorkload:
    uid: str
    namespace: str
    name: str
    queue_name: str
    cluster_queue: str
    priority_class: str
    priority: int | None
    max_execution_seconds: int | None
    active: bool
    pod_sets: tuple[PodSet, ...]
    flavors: dict[str, dict[str, str]]  # pod set -> resource -> flavor
    state: str
    reason: str
    message: str
    conditions: list[dict[str, str]] = field(default_factory=list)
    checks: list[dict[str, str]] = field(default_factory=list)
    created: str = ""


def _conditions(status: Any) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for item in as_list(as_map(status).get("conditions")):
        c = as_map(item)
        kind = as_str(c.get("type"))
        if kind:
            found[kind] = {
                "type": kind,
                "status": as_str(c.get("status")),
                "reason": as_str(c.get("reason")),
                "message": as_str(c.get("message")),
            }
    return found


def _requests(template: Any) -> dict[str, str]:
    """Per-pod requests of a pod template: containers summed is Kueue's rule too, but the values
    are kept as the text they were written in (sums of quantities are the caller's concern) unless
    a resource appears in one container only, the common case."""
    totals: dict[str, list[str]] = {}
    for container in as_list(dig(template, "spec", "containers")):
        for resource, value in as_map(dig(container, "resources", "requests")).items():
            totals.setdefault(str(resource), []).append(str(value))
    out = {}
    for resource, values in totals.items():
        numbers = [as_int(v) for v in values]
        if len(values) > 1 and all(n is not None for n in numbers):
            out[resource] = str(sum(n for n in numbers if n is not None))
        else:
            out[resource] = values[0] if len(values) == 1 else "+".join(values)
    return out


def parse_workload(obj: Any) -> ParsedWorkload:
    meta, spec, status = as_map(dig(obj, "metadata")), as_map(dig(obj, "spec")), as_map(dig(obj, "status"))
    conditions = _conditions(status)
    admission = as_map(status.get("admission"))
    flavors = {
        as_str(as_map(p).get("name")): {str(k): str(v) for k, v in as_map(as_map(p).get("flavors")).items()}
        for p in as_list(admission.get("podSetAssignments"))
    }
    checks = [
        {
            "name": as_str(as_map(c).get("name")),
            "state": as_str(as_map(c).get("state")),
            "message": as_str(as_map(c).get("message")),
        }
        for c in as_list(status.get("admissionChecks"))
    ]
    state, reason, message = _state(conditions)
    active = spec.get("active")
    return ParsedWorkload(
        uid=as_str(meta.get("uid")),
        namespace=as_str(meta.get("namespace")),
        name=as_str(meta.get("name")),
        queue_name=as_str(spec.get("queueName")),
        cluster_queue=as_str(admission.get("clusterQueue")),
        priority_class=as_str(as_map(spec.get("priorityClassRef")).get("name")),
        priority=as_int(spec.get("priority")),
        max_execution_seconds=as_int(spec.get("maximumExecutionTimeSeconds")),
        active=active is not False,
        pod_sets=tuple(
            PodSet(
                name=as_str(as_map(p).get("name")),
                count=as_int(as_map(p).get("count")) or 0,
                requests=_requests(as_map(p).get("template")),
            )
            for p in as_list(spec.get("podSets"))
        ),
        flavors=flavors,
        state=state,
        reason=reason,
        message=message,
        conditions=sorted(conditions.values(), key=lambda c: c["type"]),
        checks=checks,
        created=as_str(meta.get("creationTimestamp")),
    )


def _true(conditions: dict[str, dict[str, str]], kind: str) -> dict[str, str] | None:
    c = conditions.get(kind)
    return c if c is not None and c["status"] == "True" else None


def _state(conditions: dict[str, dict[str, str]]) -> tuple[str, str, str]:
    """(state, Kueue's reason, Kueue's message) of the condition that decides the state."""
    for kind, state in (
        ("Finished", FINISHED),
        ("Evicted", EVICTED),
        ("Admitted", ADMITTED),
        ("QuotaReserved", QUOTA_RESERVED),
    ):
        c = _true(conditions, kind)
        if c is not None:
            return state, c["reason"], c["message"]
    waiting = conditions.get("QuotaReserved") or {}
    return PENDING, waiting.get("reason", ""), waiting.get("message", "")


def plain_reason(
    *, state: str, reason: str, message: str, cluster_queue: str, checks: list[dict[str, str]]
) -> str:
    """What the state means, in a sentence a tenant can act on, Kueue's own words after it."""
    ours = next((c for c in checks if c.get("name") == BUDGET_CHECK), None)
    if state == FINISHED:
        return f"Finished{': ' + message if message else '.'}"
    if state == EVICTED:
        if reason == "AdmissionCheck":
            return f"Held by an admission check, queued again later: {message}"
        if reason in ("DeactivatedDueToAdmissionCheck", "Deactivated"):
            return f"Rejected and deactivated: {message}"
        if reason == "Preempted":
            return f"Preempted to make room for higher-priority work: {message}"
        return f"Evicted ({reason}): {message}"
    if state == ADMITTED:
        return f"Admitted: running in ClusterQueue {cluster_queue}."
    if state == QUOTA_RESERVED:
        waiting = [c for c in checks if c.get("state") != "Ready"]
        if ours is not None and ours in waiting:
            detail = ours.get("message") or "checking its GE-hour budget"
            return f"Quota reserved in ClusterQueue {cluster_queue}; waiting for gpuplatform: {detail}"
        if waiting:
            check = waiting[0]["name"]
            return f"Quota reserved in ClusterQueue {cluster_queue}; waiting for admission check {check}."
        return f"Quota reserved in ClusterQueue {cluster_queue}."
    if reason == "Inadmissible":
        return f"Kueue cannot queue it: {message}"
    if message:
        return f"Waiting for quota: {message}"
    return "Waiting for Kueue to consider it."
