"""Kueue's Workload protocol as pure functions on object dicts: which checks a Workload carries, when it is
admitted, why it waits, its queue order, and the Job template directives Kueue writes and restores."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubesim.controllers.kueue import objects as k


@dataclass
class World:
    """One pass's view of Kueue's objects, from the controllers' cache."""

    jobs: dict[tuple[str, str], dict[str, Any]]
    workloads: list[dict[str, Any]]
    cluster_queues: dict[str, dict[str, Any]]
    local_queues: dict[tuple[str, str], dict[str, Any]]
    cohorts: list[dict[str, Any]]
    flavors: dict[str, dict[str, Any]]
    checks: dict[str, dict[str, Any]]
    priority_classes: dict[str, dict[str, Any]]
    inactive: dict[str, tuple[str, str]] = field(default_factory=dict)  # CQ -> (reason, message)


def parse_time(text: str | None) -> float:
    if not text:
        return 0.0
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def format_time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def find_condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return k.find((obj.get("status") or {}).get("conditions"), kind)


def strategy_checks(cq: dict[str, Any]) -> list[dict[str, Any]]:
    strategy = (cq.get("spec") or {}).get("admissionChecksStrategy") or {}
    return list(strategy.get("admissionChecks") or [])


def cq_flavors(cq: dict[str, Any]) -> set[str]:
    return {
        f["name"]
        for group in (cq.get("spec") or {}).get("resourceGroups") or []
        for f in group.get("flavors") or []
    }


def checks_for(wl: dict[str, Any], cq: dict[str, Any]) -> list[str]:
    """workload.AdmissionChecksForWorkload: with an admission, the checks on its flavors; before one,
    only those that apply to every flavor of the ClusterQueue (an empty onFlavors means all)."""
    all_flavors = cq_flavors(cq)
    admitted_on = k.admission_flavors(wl) if (wl.get("status") or {}).get("admission") else None
    names = []
    for check in strategy_checks(cq):
        on = set(check.get("onFlavors") or []) or all_flavors
        if admitted_on is not None:
            if admitted_on & on:
                names.append(check["name"])
        elif on >= all_flavors:
            names.append(check["name"])
    return sorted(set(names))


def sync_checks(wl: dict[str, Any], cq: dict[str, Any], now: str) -> None:
    """syncAdmissionCheckConditions: missing checks added as Pending, others dropped, sorted by name."""
    status = wl.setdefault("status", {})
    wanted = checks_for(wl, cq)
    current = {c.get("name"): c for c in status.get("admissionChecks") or []}
    merged = [
        current.get(name) or {"name": name, "state": k.PENDING, "message": "", "lastTransitionTime": now}
        for name in wanted
    ]
    if merged:
        status["admissionChecks"] = merged
    else:
        status.pop("admissionChecks", None)


def sync_admitted(wl: dict[str, Any], now: str) -> bool:
    """workload.SyncAdmittedCondition with UnadmittedWorkloadsObservability off; True when it admitted."""
    status = wl.setdefault("status", {})
    conds = status.setdefault("conditions", [])
    reserved = k.is_true(wl, k.QUOTA_RESERVED)
    ready = all(c.get("state") == k.READY for c in status.get("admissionChecks") or [])
    admitted = k.is_true(wl, k.ADMITTED)
    if admitted == (reserved and ready):
        return False
    generation = wl["metadata"].get("generation")
    if reserved and ready:
        k.set_condition(
            conds, k.ADMITTED, True, "Admitted", "The workload is admitted", now=now, generation=generation
        )
        return True
    if not reserved and not ready:
        reason, message = (
            "NoReservationUnsatisfiedChecks",
            "The workload has no reservation and not all checks ready",
        )
    elif not reserved:
        reason, message = "NoReservation", "The workload has no reservation"
    else:
        reason, message = "UnsatisfiedChecks", "The workload has not all checks ready"
    if admitted:
        since = parse_time((k.find(conds, k.ADMITTED) or {}).get("lastTransitionTime"))
        ran = max(0, int(parse_time(now) - since))
        status["accumulatedPastExecutionTimeSeconds"] = (
            int(status.get("accumulatedPastExecutionTimeSeconds") or 0) + ran
        )
    k.set_condition(conds, k.ADMITTED, False, reason, message, now=now, generation=generation)
    return False


def admitted_event(wl: dict[str, Any], now_epoch: float) -> tuple[str, str, bool]:
    status = wl.get("status") or {}
    reserved = k.find(status.get("conditions"), k.QUOTA_RESERVED) or {}
    reserved_at = parse_time(reserved.get("lastTransitionTime"))
    cq = (status.get("admission") or {}).get("clusterQueue", "")
    wait = max(0, round(now_epoch - reserved_at))
    return "Admitted", f"Admitted by ClusterQueue {cq}, wait time since reservation was {wait}s", False


def queue_blocker(
    queue_name: str, lq: dict[str, Any] | None, cq_name: str, cq: dict[str, Any] | None, world: World
) -> str:
    """getQueueBlocker's messages (the legacy Inadmissible reason)."""
    if lq is None:
        return f"LocalQueue {queue_name} doesn't exist"
    if ((lq.get("spec") or {}).get("stopPolicy") or "None") != "None":
        return f"LocalQueue {queue_name} is inactive"
    if cq is None:
        return f"ClusterQueue {cq_name} doesn't exist"
    if cq_name in world.inactive:
        return f"ClusterQueue {cq_name} is inactive"
    return ""


def priority(wl: dict[str, Any]) -> int:
    return int((wl.get("spec") or {}).get("priority") or 0)


def queue_time(wl: dict[str, Any]) -> float:
    """Ordering.GetQueueOrderTimestamp: an admission-check eviction requeues at the eviction's time."""
    evicted = find_condition(wl, k.EVICTED)
    if evicted and evicted.get("status") == "True" and evicted.get("reason") == k.EVICTED_BY_ADMISSION_CHECK:
        return parse_time(evicted.get("lastTransitionTime"))
    return parse_time(wl["metadata"].get("creationTimestamp"))


def suspend(job: dict[str, Any]) -> None:
    job.setdefault("spec", {})["suspend"] = True


def deactivate(wl: dict[str, Any]) -> None:
    wl.setdefault("spec", {})["active"] = False


def drop_finalizer(wl: dict[str, Any]) -> None:
    meta = wl["metadata"]
    meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != k.FINALIZER]
    if not meta["finalizers"]:
        del meta["finalizers"]


def restore_template(wl: dict[str, Any]) -> dict[str, Any] | None:
    """The pod template as the Job had it before admission: the Workload's first pod set keeps it."""
    podsets = (wl.get("spec") or {}).get("podSets") or []
    if not podsets:
        return None
    return json.loads(json.dumps(podsets[0].get("template") or {}))


def template_directives_of(template: dict[str, Any]) -> tuple[Any, ...]:
    spec = template.get("spec") or {}
    return (
        (template.get("metadata") or {}).get("labels") or {},
        spec.get("nodeSelector") or {},
        spec.get("tolerations") or [],
    )


def template_directives(job: dict[str, Any]) -> tuple[Any, ...]:
    return template_directives_of((job.get("spec") or {}).get("template") or {})


def set_template(job: dict[str, Any], template: dict[str, Any]) -> None:
    """Write the scheduling directives of `template` (labels, node selector, tolerations) on the Job."""
    target = job.setdefault("spec", {}).setdefault("template", {})
    labels, selector, tolerations = template_directives_of(template)
    meta = target.setdefault("metadata", {})
    if labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)
    spec = target.setdefault("spec", {})
    for key, value in (("nodeSelector", selector), ("tolerations", tolerations)):
        if value:
            spec[key] = value
        else:
            spec.pop(key, None)
