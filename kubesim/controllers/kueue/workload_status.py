"""A Workload's status as Kueue's workload controller and scheduler move it, one mutation each.

Each runs inside the controller's read-modify-write under the store's lock (``Kueue._write``), so it
sees the Workload as stored, never a stale copy; the events it appends are emitted by the controller
only once the write took.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesim.controllers.kueue import objects as k
from kubesim.controllers.kueue.protocol import (
    World,
    admitted_event,
    format_time,
    parse_time,
    queue_blocker,
    sync_admitted,
    sync_checks,
)

Events = list[tuple[str, str, bool]]  # (reason, message, warning)


def reconcile(
    wl: dict[str, Any],
    *,
    job: dict[str, Any] | None,
    world: World,
    events: Events,
    clock: Callable[[], float],
    due: Callable[[float], None],
) -> None:
    """One reconcile of a Workload's status, in the order Kueue's controllers take the steps."""
    now_epoch = clock()
    now = format_time(now_epoch)
    generation = wl["metadata"].get("generation")
    status = wl.setdefault("status", {})
    conds: list[dict[str, Any]] = status.setdefault("conditions", [])
    if k.is_true(wl, k.FINISHED):
        return
    if job is not None:
        finished, succeeded, message = k.job_finished(job)
        if finished:
            reason = "Succeeded" if succeeded else "Failed"
            k.set_condition(conds, k.FINISHED, True, reason, message, now=now, generation=generation)
            return
    checks: list[dict[str, Any]] = status.get("admissionChecks") or []
    # A check asked to be retried later: the workload waits at least that long (NeedsRequeueAtUpdate).
    retry_at = max(
        (
            parse_time(c.get("lastTransitionTime")) + int(c["requeueAfterSeconds"])
            for c in checks
            if c.get("state") == k.RETRY and c.get("requeueAfterSeconds") is not None
        ),
        default=0.0,
    )
    if retry_at > now_epoch:
        requeue = status.setdefault("requeueState", {})
        if parse_time(requeue.get("requeueAt")) < retry_at:
            requeue["requeueAt"] = format_time(retry_at)
    active = (wl.get("spec") or {}).get("active", True)
    if not active:
        if not k.is_true(wl, k.EVICTED):
            target = k.find(conds, k.DEACTIVATION_TARGET)
            reason, message = k.DEACTIVATED, "The workload is deactivated"
            if target is not None:
                reason = f"{k.DEACTIVATED}DueTo{target.get('reason', '')}"
                message = f"{message} due to {target.get('message', '')}"
            evict(wl, reason, message, now, events)
            k.remove_condition(conds, k.DEACTIVATION_TARGET)
        status.pop("requeueState", None)
    else:
        requeued = k.find(conds, k.REQUEUED)
        if requeued is not None and requeued.get("status") == "False":
            if requeued.get("reason") in (k.EVICTED_BY_ADMISSION_CHECK, "PodsReadyTimeout"):
                requeue_at = parse_time((status.get("requeueState") or {}).get("requeueAt"))
                if requeue_at > now_epoch:
                    due(requeue_at)
                else:
                    (status.get("requeueState") or {}).pop("requeueAt", None)
                    if status.get("requeueState") == {}:
                        status.pop("requeueState")
                    k.set_condition(
                        conds,
                        k.REQUEUED,
                        True,
                        k.BACKOFF_FINISHED,
                        "The workload backoff was finished",
                        now=now,
                        generation=generation,
                    )
            elif requeued.get("reason") == k.DEACTIVATED:
                k.set_condition(
                    conds,
                    k.REQUEUED,
                    True,
                    "Reactivated",
                    "The workload was reactivated",
                    now=now,
                    generation=generation,
                )
    # The job reconciler releases an evicted workload's quota once its job is stopped.
    evicted = k.find(conds, k.EVICTED)
    job_stopped = job is None or bool((job.get("spec") or {}).get("suspend"))
    if evicted and evicted.get("status") == "True" and k.is_true(wl, k.QUOTA_RESERVED) and job_stopped:
        requeue = evicted.get("reason") in (k.EVICTED_BY_PREEMPTION, "NodeFailures")
        k.set_condition(
            conds,
            k.REQUEUED,
            requeue,
            evicted.get("reason", ""),
            evicted.get("message", ""),
            now=now,
            generation=generation,
        )
        unset_reservation(wl, k.REASON_PENDING, evicted.get("message", ""), now)
    queue_name = (wl.get("spec") or {}).get("queueName", "")
    lq = world.local_queues.get((wl["metadata"]["namespace"], queue_name))
    cq_name = ((lq or {}).get("spec") or {}).get("clusterQueue", "")
    cq = world.cluster_queues.get(cq_name)
    if cq is not None:
        sync_checks(wl, cq, now)
    if not k.is_true(wl, k.ADMITTED):
        if not k.is_true(wl, k.QUOTA_RESERVED):
            blocker = queue_blocker(queue_name, lq, cq_name, cq, world)
            if blocker:
                k.set_condition(
                    conds,
                    k.QUOTA_RESERVED,
                    False,
                    k.REASON_INADMISSIBLE,
                    blocker,
                    now=now,
                    generation=generation,
                )
        if sync_admitted(wl, now):
            events.append(admitted_event(wl, now_epoch))
    if k.is_true(wl, k.QUOTA_RESERVED) and not k.is_true(wl, k.EVICTED):
        checks = status.get("admissionChecks") or []
        rejected = [c for c in checks if c.get("state") == k.REJECTED]
        retry = [c for c in checks if c.get("state") == k.RETRY]
        if rejected:
            message = k.checks_message(rejected, k.REJECTED)
            k.set_condition(
                conds,
                k.DEACTIVATION_TARGET,
                True,
                k.EVICTED_BY_ADMISSION_CHECK,
                message,
                now=now,
                generation=generation,
            )
            events.append(("AdmissionCheckRejected", f"Deactivated due to {message}", True))
        elif retry:
            message = f"Evicted due to {k.checks_message(retry, k.RETRY)}"
            evict(wl, k.EVICTED_BY_ADMISSION_CHECK, message, now, events)


def evict(wl: dict[str, Any], reason: str, message: str, now: str, events: Events) -> None:
    """evict.prepareForEviction: Evicted=True, checks back to Pending, the eviction counted."""
    status = wl["status"]
    k.set_condition(
        status["conditions"],
        k.EVICTED,
        True,
        reason,
        message,
        now=now,
        generation=wl["metadata"].get("generation"),
    )
    for check in status.get("admissionChecks") or []:
        if check.get("state") == k.PENDING:
            continue
        previous = check.get("state", "")
        reset: dict[str, Any] = {
            "name": check["name"],
            "state": k.PENDING,
            "message": f"Reset to Pending after eviction. Previously: {previous}",
            "lastTransitionTime": now,
        }
        if check.get("requeueAfterSeconds") is not None:
            reset["requeueAfterSeconds"] = check["requeueAfterSeconds"]
        if previous == k.RETRY:
            reset["retryCount"] = int(check.get("retryCount") or 0) + 1
        check.clear()
        check.update(reset)
    cause = ""
    if reason.startswith(f"{k.DEACTIVATED}DueTo"):
        reason, cause = k.DEACTIVATED, reason[len(f"{k.DEACTIVATED}DueTo") :]
    stats = status.setdefault("schedulingStats", {}).setdefault("evictions", [])
    entry = next((e for e in stats if e.get("reason") == reason and e.get("underlyingCause") == cause), None)
    if entry is None:
        entry = {"reason": reason, "underlyingCause": cause, "count": 0}
        stats.append(entry)
    entry["count"] = int(entry.get("count", 0)) + 1
    event_reason = f"{k.EVICTED}DueTo{reason}" + (f"DueTo{cause}" if cause else "")
    if status.get("admission"):
        events.append((event_reason, message, False))


def unset_reservation(wl: dict[str, Any], reason: str, message: str, now: str) -> None:
    status = wl["status"]
    k.set_condition(
        status["conditions"],
        k.QUOTA_RESERVED,
        False,
        reason,
        message,
        now=now,
        generation=wl["metadata"].get("generation"),
    )
    status.pop("admission", None)
    sync_admitted(wl, now)


def not_fit(
    wl: dict[str, Any], *, message: str, requests: list[dict[str, Any]], clock: Callable[[], float]
) -> None:
    if k.is_true(wl, k.QUOTA_RESERVED):
        return
    now = format_time(clock())
    status = wl.setdefault("status", {})
    conds = status.setdefault("conditions", [])
    k.set_condition(
        conds,
        k.QUOTA_RESERVED,
        False,
        k.REASON_PENDING,
        message,
        now=now,
        generation=wl["metadata"].get("generation"),
    )
    status["resourceRequests"] = requests
    sync_admitted(wl, now)


def reserve(
    wl: dict[str, Any],
    *,
    cq: dict[str, Any],
    assignments: list[dict[str, Any]],
    events: Events,
    clock: Callable[[], float],
) -> None:
    """workload.SetQuotaReservation, then the checks the admission needs and Admitted if none."""
    if k.is_true(wl, k.QUOTA_RESERVED):
        return
    now_epoch = clock()
    now = format_time(now_epoch)
    generation = wl["metadata"].get("generation")
    status = wl.setdefault("status", {})
    conds = status.setdefault("conditions", [])
    cq_name = cq["metadata"]["name"]
    status["admission"] = {"clusterQueue": cq_name, "podSetAssignments": assignments}
    status.pop("resourceRequests", None)
    k.set_condition(
        conds,
        k.QUOTA_RESERVED,
        True,
        "QuotaReserved",
        f"Quota reserved in ClusterQueue {cq_name}",
        now=now,
        generation=generation,
    )
    for kind in (k.EVICTED, k.PREEMPTED):
        previous = k.find(conds, kind)
        if previous is not None and previous.get("status") == "True":
            k.set_condition(
                conds,
                kind,
                False,
                "QuotaReserved",
                f"Previously: {previous.get('message', '')}",
                now=now,
                generation=generation,
            )
    queued_since = parse_time(
        (k.find(conds, k.REQUEUED) or {}).get("lastTransitionTime") or wl["metadata"].get("creationTimestamp")
    )
    events.append(
        (
            "QuotaReserved",
            f"Quota reserved in ClusterQueue {cq_name}, wait time since queued was "
            f"{max(0, round(now_epoch - queued_since))}s",
            False,
        )
    )
    sync_checks(wl, cq, now)
    if sync_admitted(wl, now):
        events.append(admitted_event(wl, now_epoch))
