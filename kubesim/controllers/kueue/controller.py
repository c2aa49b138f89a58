"""The `kueue` controller: a stand-in for Kueue v0.19 that is faithful on the protocol, not on scheduling.

It does what gpuplatform sees of Kueue: a Workload for each batch/v1 Job with a queue-name label, quota
reserved within ClusterQueue and cohort limits, admission checks honoured (Pending on the Workload,
Ready admits, Retry evicts and requeues, Rejected deactivates), the Job unsuspended with its flavor's
node labels once admitted, and Finished when the Job completes. Its scheduler is deliberately simple:
workloads in priority then age order, the first flavor of each resource group that fits (no
preemption, fair sharing, partial admission or topology). docs/kubesim-scenarios.md has the details.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from kubesim.controllers.base import Context, log
from kubesim.controllers.cache import key_of
from kubesim.controllers.kueue import objects as k
from kubesim.controllers.kueue.quota import ZERO, QuotaTree, amount
from kubesim.errors import ApiError
from kubesim.selectors import label_selector_matches
from kubesim.strategy import WriteOptions

Mutation = Callable[[dict[str, Any]], None]


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


def _epoch(text: str | None) -> float:
    if not text:
        return 0.0
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def _text(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Kueue:
    name = "kueue"

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._seen: tuple[int, ...] | None = None
        self._next_due: float | None = None
        self._events: list[tuple[dict[str, Any], str, str, str]] = []

    # ------------------------------------------------------------------------------------ the pass

    def reconcile(self) -> int:
        cache = self.ctx.cache
        if not self._served():
            return 0
        seen = tuple(cache.generation[r] for r in ("jobs", *k.KUEUE_PLURALS))
        now = self.ctx.clock()
        if seen == self._seen and (self._next_due is None or now < self._next_due):
            return 0
        self._next_due = None
        world = self._world()
        writes = self._sync_jobs(world)
        writes += self._sync_workloads(world)
        writes += self._schedule(self._world())
        writes += self._sync_queue_status(self._world())
        for obj, event_type, reason, message in self._events:
            self.ctx.event(obj, event_type, reason, message, k.COMPONENT)
        self._events.clear()
        self._seen = None if writes else seen
        return writes

    def _served(self) -> bool:
        try:
            return self.ctx.store.info("workloads").group == k.GROUP
        except KeyError:
            return False

    def _world(self) -> World:
        cache = self.ctx.cache

        def by_name(resource: str) -> dict[str, dict[str, Any]]:
            return {o["metadata"]["name"]: o for o in cache.values(resource)}

        world = World(
            jobs={key_of(j): j for j in cache.values("jobs")},
            workloads=cache.values("workloads"),
            cluster_queues=by_name("clusterqueues"),
            local_queues={key_of(q): q for q in cache.values("localqueues")},
            cohorts=cache.values("cohorts"),
            flavors=by_name("resourceflavors"),
            checks=by_name("admissionchecks"),
            priority_classes=by_name("workloadpriorityclasses"),
        )
        for name, cq in world.cluster_queues.items():
            inactive = self._inactive_reason(cq, world)
            if inactive is not None:
                world.inactive[name] = inactive
        return world

    def _inactive_reason(self, cq: dict[str, Any], world: World) -> tuple[str, str] | None:
        """clusterQueue.inactiveReason: stopped, missing flavors, missing or inactive checks."""
        spec = cq.get("spec") or {}
        reasons: list[tuple[str, str]] = []
        if cq["metadata"].get("deletionTimestamp"):
            return "Terminating", "Can't admit new workloads; clusterQueue is terminating"
        if (spec.get("stopPolicy") or "None") != "None":
            reasons.append(("Stopped", "is stopped"))
        missing = [
            f["name"]
            for group in spec.get("resourceGroups") or []
            for f in group.get("flavors") or []
            if f["name"] not in world.flavors
        ]
        if missing:
            reasons.append(("FlavorNotFound", f"references missing ResourceFlavor(s): {','.join(missing)}"))
        names = [c["name"] for c in _strategy_checks(cq)]
        absent = [n for n in names if n not in world.checks]
        if absent:
            reasons.append(
                ("AdmissionCheckNotFound", f"references missing AdmissionCheck(s): {','.join(absent)}")
            )
        inactive = [n for n in names if n in world.checks and not k.is_true(world.checks[n], "Active")]
        if inactive:
            reasons.append(
                ("AdmissionCheckInactive", f"references inactive AdmissionCheck(s): {','.join(inactive)}")
            )
        if not reasons:
            return None
        return reasons[0][0], "Can't admit new workloads: " + ", ".join(m for _, m in reasons) + "."

    # ----------------------------------------------------------------------------------- writes

    def _write(
        self, resource: str, obj: dict[str, Any], mutate: Mutation, *, status: bool, manager: str
    ) -> dict[str, Any] | None:
        """Read-modify-write under the store's lock, so a check controller's write in between is
        never lost; returns the new object when it changed, else None."""
        namespace, name = key_of(obj)

        def apply(current: dict[str, Any]) -> dict[str, Any]:
            mutate(current)
            return current

        try:
            entry, _ = self.ctx.store.modify_entry(
                resource,
                namespace or None,
                name,
                apply,
                WriteOptions(field_manager=manager),
                subresource="status" if status else None,
            )
        except ApiError as exc:
            if exc.status == 404:
                self.ctx.cache.put(resource, None, (namespace, name))
            else:
                log.info("kueue: %s %s/%s: write refused: %s", resource, namespace, name, exc.message)
            return None
        new: dict[str, Any] = json.loads(entry.raw)
        if new["metadata"].get("resourceVersion") == obj["metadata"].get("resourceVersion"):
            return None
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
            self.ctx.cache.put(resource, None, (namespace, name))  # the last finalizer went: deleted
        else:
            self.ctx.cache.put(resource, new)
        return new

    def _event(self, obj: dict[str, Any], reason: str, message: str, *, warning: bool = False) -> None:
        self._events.append((obj, "Warning" if warning else "Normal", reason, message))

    def _due(self, epoch: float) -> None:
        if self._next_due is None or epoch < self._next_due:
            self._next_due = epoch

    # -------------------------------------------------------------------- jobs (jobframework's side)

    def _sync_jobs(self, world: World) -> int:
        owned = {}
        for wl in world.workloads:
            for ref in wl["metadata"].get("ownerReferences") or []:
                if ref.get("kind") == "Job" and ref.get("controller"):
                    owned[ref.get("uid")] = wl
        writes = 0
        for job in world.jobs.values():
            labels = job["metadata"].get("labels") or {}
            mine = owned.get(job["metadata"].get("uid"))
            if mine is None and not labels.get(k.QUEUE_LABEL):
                continue
            if mine is None:
                writes += self._create_workload(job, world)
            else:
                writes += self._drive_job(job, mine, world)
        return writes

    def _create_workload(self, job: dict[str, Any], world: World) -> int:
        if k.job_finished(job)[0] or job["metadata"].get("deletionTimestamp"):
            return 0
        class_name = (job["metadata"].get("labels") or {}).get(k.PRIORITY_CLASS_LABEL)
        priority_class = world.priority_classes.get(class_name) if class_name else None
        if class_name and priority_class is None:
            return 0  # Kueue retries until the WorkloadPriorityClass exists
        body = k.new_workload(job, priority_class)
        created = self.ctx.create("workloads", body)
        if created is None:
            return 0
        meta = created["metadata"]
        self._event(job, "CreatedWorkload", f"Created Workload: {meta['namespace']}/{meta['name']}")
        return 1

    def _drive_job(self, job: dict[str, Any], wl: dict[str, Any], world: World) -> int:
        """ReconcileGenericJob steps 6-8: stop an evicted or unadmitted job, start an admitted one."""
        if k.job_finished(job)[0] or k.is_true(wl, k.FINISHED):
            return 0
        suspended = bool((job.get("spec") or {}).get("suspend"))
        admitted = k.is_true(wl, k.ADMITTED)
        if admitted and not k.is_true(wl, k.EVICTED):
            if not suspended:
                return 0
            return self._start_job(job, wl, world)
        if not suspended:
            evicted = find_condition(wl, k.EVICTED)
            message = (
                evicted.get("message", "")
                if evicted and evicted.get("status") == "True"
                else "Not admitted by cluster queue"
            )
            if self._write("jobs", job, _suspend, status=False, manager=k.MANAGER) is None:
                return 0
            self._event(job, "Stopped", message)
            return 1
        restore = _restore_template(wl)
        if restore is not None and _template_directives(job) != _template_directives_of(restore):
            changed = self._write(
                "jobs", job, lambda j: _set_template(j, restore), status=False, manager=k.MANAGER
            )
            return 1 if changed is not None else 0
        return 0

    def _start_job(self, job: dict[str, Any], wl: dict[str, Any], world: World) -> int:
        admission = (wl.get("status") or {}).get("admission") or {}
        template = _restore_template(wl) or {}
        spec = template.setdefault("spec", {})
        labels = template.setdefault("metadata", {}).setdefault("labels", {})
        for psa in admission.get("podSetAssignments") or []:
            seen: set[str] = set()
            for flavor_name in (psa.get("flavors") or {}).values():
                if flavor_name in seen or flavor_name not in world.flavors:
                    continue
                seen.add(flavor_name)
                flavor = world.flavors[flavor_name].get("spec") or {}
                if flavor.get("nodeLabels"):
                    spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **flavor["nodeLabels"]}
                if flavor.get("tolerations"):
                    spec["tolerations"] = [*(spec.get("tolerations") or []), *flavor["tolerations"]]
            labels[k.PODSET_LABEL] = psa.get("name", k.DEFAULT_PODSET)
        labels[k.LOCAL_QUEUE_LABEL] = (wl.get("spec") or {}).get("queueName", "")
        labels[k.CLUSTER_QUEUE_LABEL] = admission.get("clusterQueue", "")

        def start(current: dict[str, Any]) -> None:
            _set_template(current, template)
            current["spec"]["suspend"] = False

        if self._write("jobs", job, start, status=False, manager=k.MANAGER) is None:
            return 0
        self._event(job, "Started", f"Admitted by clusterQueue {admission.get('clusterQueue', '')}")
        return 1

    # ------------------------------------------------------------- workloads (the workload controller)

    def _sync_workloads(self, world: World) -> int:
        writes = 0
        for wl in world.workloads:
            meta = wl["metadata"]
            if k.FINALIZER in (meta.get("finalizers") or []) and (
                meta.get("deletionTimestamp") or k.is_true(wl, k.FINISHED)
            ):
                if self._write("workloads", wl, _drop_finalizer, status=False, manager=k.MANAGER):
                    writes += 1
                continue
            if meta.get("deletionTimestamp"):
                continue
            if (wl.get("spec") or {}).get("active", True) and k.is_true(wl, k.DEACTIVATION_TARGET):
                if self._write("workloads", wl, _deactivate, status=False, manager=k.MANAGER):
                    writes += 1
                continue
            job = self._owner_job(wl, world)
            events: list[tuple[str, str, bool]] = []
            new = self._write(
                "workloads",
                wl,
                functools.partial(self._workload_status, job=job, world=world, events=events),
                status=True,
                manager=k.ADMISSION_MANAGER,
            )
            if new is not None:
                writes += 1
                for reason, message, warning in events:
                    self._event(new, reason, message, warning=warning)
        return writes

    def _owner_job(self, wl: dict[str, Any], world: World) -> dict[str, Any] | None:
        for ref in wl["metadata"].get("ownerReferences") or []:
            if ref.get("kind") == "Job":
                job = world.jobs.get((wl["metadata"]["namespace"], ref.get("name", "")))
                if job is not None and job["metadata"].get("uid") == ref.get("uid"):
                    return job
        return None

    def _workload_status(
        self,
        wl: dict[str, Any],
        job: dict[str, Any] | None,
        world: World,
        events: list[tuple[str, str, bool]],
    ) -> None:
        """One reconcile of a Workload's status, in the order Kueue's controllers take the steps."""
        now_epoch = self.ctx.clock()
        now = _text(now_epoch)
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
                _epoch(c.get("lastTransitionTime")) + int(c["requeueAfterSeconds"])
                for c in checks
                if c.get("state") == k.RETRY and c.get("requeueAfterSeconds") is not None
            ),
            default=0.0,
        )
        if retry_at > now_epoch:
            requeue = status.setdefault("requeueState", {})
            if _epoch(requeue.get("requeueAt")) < retry_at:
                requeue["requeueAt"] = _text(retry_at)
        active = (wl.get("spec") or {}).get("active", True)
        if not active:
            if not k.is_true(wl, k.EVICTED):
                target = k.find(conds, k.DEACTIVATION_TARGET)
                reason, message = k.DEACTIVATED, "The workload is deactivated"
                if target is not None:
                    reason = f"{k.DEACTIVATED}DueTo{target.get('reason', '')}"
                    message = f"{message} due to {target.get('message', '')}"
                self._evict(wl, reason, message, now, events)
                k.remove_condition(conds, k.DEACTIVATION_TARGET)
            status.pop("requeueState", None)
        else:
            requeued = k.find(conds, k.REQUEUED)
            if requeued is not None and requeued.get("status") == "False":
                if requeued.get("reason") in (k.EVICTED_BY_ADMISSION_CHECK, "PodsReadyTimeout"):
                    requeue_at = _epoch((status.get("requeueState") or {}).get("requeueAt"))
                    if requeue_at > now_epoch:
                        self._due(requeue_at)
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
            self._unset_reservation(wl, k.REASON_PENDING, evicted.get("message", ""), now)
        queue_name = (wl.get("spec") or {}).get("queueName", "")
        lq = world.local_queues.get((wl["metadata"]["namespace"], queue_name))
        cq_name = ((lq or {}).get("spec") or {}).get("clusterQueue", "")
        cq = world.cluster_queues.get(cq_name)
        if cq is not None:
            _sync_checks(wl, cq, now)
        if not k.is_true(wl, k.ADMITTED):
            if not k.is_true(wl, k.QUOTA_RESERVED):
                blocker = _queue_blocker(queue_name, lq, cq_name, cq, world)
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
            if _sync_admitted(wl, now):
                events.append(_admitted_event(wl, now_epoch))
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
                self._evict(wl, k.EVICTED_BY_ADMISSION_CHECK, message, now, events)

    def _evict(
        self, wl: dict[str, Any], reason: str, message: str, now: str, events: list[tuple[str, str, bool]]
    ) -> None:
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
        entry = next(
            (e for e in stats if e.get("reason") == reason and e.get("underlyingCause") == cause), None
        )
        if entry is None:
            entry = {"reason": reason, "underlyingCause": cause, "count": 0}
            stats.append(entry)
        entry["count"] = int(entry.get("count", 0)) + 1
        event_reason = f"{k.EVICTED}DueTo{reason}" + (f"DueTo{cause}" if cause else "")
        if status.get("admission"):
            events.append((event_reason, message, False))

    def _unset_reservation(self, wl: dict[str, Any], reason: str, message: str, now: str) -> None:
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
        _sync_admitted(wl, now)

    # ---------------------------------------------------------------------------- the scheduler

    def _schedule(self, world: World) -> int:
        tree = QuotaTree(list(world.cluster_queues.values()), world.cohorts)
        pending: list[tuple[dict[str, Any], dict[str, Any]]] = []
        for wl in world.workloads:
            if k.is_true(wl, k.FINISHED) or wl["metadata"].get("deletionTimestamp"):
                continue
            admission = (wl.get("status") or {}).get("admission")
            if k.is_true(wl, k.QUOTA_RESERVED) and admission:
                tree.add_usage(admission.get("clusterQueue", ""), k.admission_usage(wl))
                continue
            cq = self._schedulable_in(wl, world)
            if cq is not None:
                pending.append((wl, cq))
        pending.sort(key=lambda p: (-_priority(p[0]), _queue_time(p[0]), key_of(p[0])))
        blocked: set[str] = set()
        writes = 0
        for wl, cq in pending:
            cq_name = cq["metadata"]["name"]
            if cq_name in blocked:
                continue
            assignment, message, requests = _assign(wl, cq, tree, world)
            if not _namespace_matches(wl, cq, self.ctx.store):
                assignment, message = None, "Workload namespace doesn't match ClusterQueue selector"
            if assignment is None:
                if (cq.get("spec") or {}).get("queueingStrategy") == "StrictFIFO":
                    blocked.add(cq_name)
                new = self._write(
                    "workloads",
                    wl,
                    functools.partial(self._not_fit, message=message, requests=requests),
                    status=True,
                    manager=k.ADMISSION_MANAGER,
                )
                if new is not None:
                    writes += 1
                    self._event(new, k.REASON_PENDING, message, warning=True)
                continue
            events: list[tuple[str, str, bool]] = []
            new = self._write(
                "workloads",
                wl,
                functools.partial(self._reserve, cq=cq, assignments=assignment, events=events),
                status=True,
                manager=k.ADMISSION_MANAGER,
            )
            if new is not None and k.is_true(new, k.QUOTA_RESERVED):
                writes += 1
                tree.add_usage(cq_name, k.admission_usage(new))
                for reason, text, warning in events:
                    self._event(new, reason, text, warning=warning)
        return writes

    def _schedulable_in(self, wl: dict[str, Any], world: World) -> dict[str, Any] | None:
        """The ClusterQueue a pending Workload can be admitted to now, or None (queue.Manager + backoff)."""
        spec, status = wl.get("spec") or {}, wl.get("status") or {}
        if not spec.get("active", True):
            return None
        requeued = k.find(status.get("conditions"), k.REQUEUED)
        if requeued is not None and requeued.get("status") == "False":
            return None
        requeue_at = _epoch((status.get("requeueState") or {}).get("requeueAt"))
        if requeue_at > self.ctx.clock():
            self._due(requeue_at)
            return None
        lq = world.local_queues.get((wl["metadata"]["namespace"], spec.get("queueName", "")))
        if lq is None or ((lq.get("spec") or {}).get("stopPolicy") or "None") != "None":
            return None
        cq_name = (lq.get("spec") or {}).get("clusterQueue", "")
        cq = world.cluster_queues.get(cq_name)
        if cq is None or cq_name in world.inactive:
            return None
        return cq

    def _not_fit(self, wl: dict[str, Any], message: str, requests: list[dict[str, Any]]) -> None:
        if k.is_true(wl, k.QUOTA_RESERVED):
            return
        now = _text(self.ctx.clock())
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
        _sync_admitted(wl, now)

    def _reserve(
        self,
        wl: dict[str, Any],
        cq: dict[str, Any],
        assignments: list[dict[str, Any]],
        events: list[tuple[str, str, bool]],
    ) -> None:
        """workload.SetQuotaReservation, then the checks the admission needs and Admitted if none."""
        if k.is_true(wl, k.QUOTA_RESERVED):
            return
        now_epoch = self.ctx.clock()
        now = _text(now_epoch)
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
        queued_since = _epoch(
            (k.find(conds, k.REQUEUED) or {}).get("lastTransitionTime")
            or wl["metadata"].get("creationTimestamp")
        )
        events.append(
            (
                "QuotaReserved",
                f"Quota reserved in ClusterQueue {cq_name}, wait time since queued was "
                f"{max(0, round(now_epoch - queued_since))}s",
                False,
            )
        )
        _sync_checks(wl, cq, now)
        if _sync_admitted(wl, now):
            events.append(_admitted_event(wl, now_epoch))

    # ------------------------------------------------------------------------ queue status objects

    def _sync_queue_status(self, world: World) -> int:
        reserving: dict[str, list[dict[str, Any]]] = {}
        pending: dict[str, int] = {}
        lq_reserving: dict[tuple[str, str], list[dict[str, Any]]] = {}
        lq_pending: dict[tuple[str, str], int] = {}
        for wl in world.workloads:
            if k.is_true(wl, k.FINISHED):
                continue
            lq_key = (wl["metadata"]["namespace"], (wl.get("spec") or {}).get("queueName", ""))
            admission = (wl.get("status") or {}).get("admission")
            if k.is_true(wl, k.QUOTA_RESERVED) and admission:
                reserving.setdefault(admission.get("clusterQueue", ""), []).append(wl)
                lq_reserving.setdefault(lq_key, []).append(wl)
            elif (wl.get("spec") or {}).get("active", True) and lq_key in world.local_queues:
                cq_name = ((world.local_queues[lq_key].get("spec")) or {}).get("clusterQueue", "")
                pending[cq_name] = pending.get(cq_name, 0) + 1
                lq_pending[lq_key] = lq_pending.get(lq_key, 0) + 1
        writes = 0
        now = _text(self.ctx.clock())
        for name, cq in world.cluster_queues.items():
            held = reserving.get(name, [])
            inactive = world.inactive.get(name)

            def cq_status(
                cur: dict[str, Any],
                held: list[dict[str, Any]] = held,
                inactive: Any = inactive,
                waiting: int = pending.get(name, 0),
            ) -> None:
                status = cur.setdefault("status", {})
                status["pendingWorkloads"] = waiting
                status["reservingWorkloads"] = len(held)
                status["admittedWorkloads"] = sum(1 for w in held if k.is_true(w, k.ADMITTED))
                groups = (cur.get("spec") or {}).get("resourceGroups") or []
                status["flavorsReservation"] = _flavor_usage(groups, held, borrowed=True)
                admitted = [w for w in held if k.is_true(w, k.ADMITTED)]
                status["flavorsUsage"] = _flavor_usage(groups, admitted, borrowed=True)
                reason, message = inactive or ("Ready", "Can admit new workloads")
                k.set_condition(
                    status.setdefault("conditions", []),
                    "Active",
                    inactive is None,
                    reason,
                    message,
                    now=now,
                    generation=cur["metadata"].get("generation"),
                )

            if self._write("clusterqueues", cq, cq_status, status=True, manager=k.MANAGER):
                writes += 1
        for key, lq in world.local_queues.items():
            held = lq_reserving.get(key, [])
            spec = lq.get("spec") or {}
            target = world.cluster_queues.get(spec.get("clusterQueue", ""))
            if (spec.get("stopPolicy") or "None") != "None":
                active = (False, "Stopped", "LocalQueue is stopped")
            elif target is None:
                active = (False, "ClusterQueueDoesNotExist", "Can't submit new workloads to clusterQueue")
            elif target["metadata"]["name"] in world.inactive:
                active = (False, "ClusterQueueIsInactive", "Can't submit new workloads to clusterQueue")
            else:
                active = (True, "Ready", "Can submit new workloads to localQueue")

            def lq_status(
                cur: dict[str, Any],
                held: list[dict[str, Any]] = held,
                active: Any = active,
                cq: Any = target,
                key: Any = key,
            ) -> None:
                status = cur.setdefault("status", {})
                status["pendingWorkloads"] = lq_pending.get(key, 0)
                status["reservingWorkloads"] = len(held)
                status["admittedWorkloads"] = sum(1 for w in held if k.is_true(w, k.ADMITTED))
                groups = ((cq or {}).get("spec") or {}).get("resourceGroups") or []
                status["flavorsReservation"] = _flavor_usage(groups, held, borrowed=False)
                admitted = [w for w in held if k.is_true(w, k.ADMITTED)]
                status["flavorsUsage"] = _flavor_usage(groups, admitted, borrowed=False)
                k.set_condition(
                    status.setdefault("conditions", []),
                    "Active",
                    active[0],
                    active[1],
                    active[2],
                    now=now,
                    generation=cur["metadata"].get("generation"),
                )

            if self._write("localqueues", lq, lq_status, status=True, manager=k.MANAGER):
                writes += 1
        return writes


# ------------------------------------------------------------------------------------------ helpers


def find_condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return k.find((obj.get("status") or {}).get("conditions"), kind)


def _strategy_checks(cq: dict[str, Any]) -> list[dict[str, Any]]:
    strategy = (cq.get("spec") or {}).get("admissionChecksStrategy") or {}
    return list(strategy.get("admissionChecks") or [])


def _cq_flavors(cq: dict[str, Any]) -> set[str]:
    return {
        f["name"]
        for group in (cq.get("spec") or {}).get("resourceGroups") or []
        for f in group.get("flavors") or []
    }


def _checks_for(wl: dict[str, Any], cq: dict[str, Any]) -> list[str]:
    """workload.AdmissionChecksForWorkload: with an admission, the checks on its flavors; before one,
    only those that apply to every flavor of the ClusterQueue (an empty onFlavors means all)."""
    all_flavors = _cq_flavors(cq)
    admitted_on = k.admission_flavors(wl) if (wl.get("status") or {}).get("admission") else None
    names = []
    for check in _strategy_checks(cq):
        on = set(check.get("onFlavors") or []) or all_flavors
        if admitted_on is not None:
            if admitted_on & on:
                names.append(check["name"])
        elif on >= all_flavors:
            names.append(check["name"])
    return sorted(set(names))


def _sync_checks(wl: dict[str, Any], cq: dict[str, Any], now: str) -> None:
    """syncAdmissionCheckConditions: missing checks added as Pending, others dropped, sorted by name."""
    status = wl.setdefault("status", {})
    wanted = _checks_for(wl, cq)
    current = {c.get("name"): c for c in status.get("admissionChecks") or []}
    merged = [
        current.get(name) or {"name": name, "state": k.PENDING, "message": "", "lastTransitionTime": now}
        for name in wanted
    ]
    if merged:
        status["admissionChecks"] = merged
    else:
        status.pop("admissionChecks", None)


def _sync_admitted(wl: dict[str, Any], now: str) -> bool:
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
        since = _epoch((k.find(conds, k.ADMITTED) or {}).get("lastTransitionTime"))
        ran = max(0, int(_epoch(now) - since))
        status["accumulatedPastExecutionTimeSeconds"] = (
            int(status.get("accumulatedPastExecutionTimeSeconds") or 0) + ran
        )
    k.set_condition(conds, k.ADMITTED, False, reason, message, now=now, generation=generation)
    return False


def _admitted_event(wl: dict[str, Any], now_epoch: float) -> tuple[str, str, bool]:
    status = wl.get("status") or {}
    reserved_at = _epoch((k.find(status.get("conditions"), k.QUOTA_RESERVED) or {}).get("lastTransitionTime"))
    cq = (status.get("admission") or {}).get("clusterQueue", "")
    wait = max(0, round(now_epoch - reserved_at))
    return "Admitted", f"Admitted by ClusterQueue {cq}, wait time since reservation was {wait}s", False


def _queue_blocker(
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


def _priority(wl: dict[str, Any]) -> int:
    return int((wl.get("spec") or {}).get("priority") or 0)


def _queue_time(wl: dict[str, Any]) -> float:
    """Ordering.GetQueueOrderTimestamp: an admission-check eviction requeues at the eviction's time."""
    evicted = find_condition(wl, k.EVICTED)
    if evicted and evicted.get("status") == "True" and evicted.get("reason") == k.EVICTED_BY_ADMISSION_CHECK:
        return _epoch(evicted.get("lastTransitionTime"))
    return _epoch(wl["metadata"].get("creationTimestamp"))


def _namespace_matches(wl: dict[str, Any], cq: dict[str, Any], store: Any) -> bool:
    namespace = store.get("namespaces", None, wl["metadata"]["namespace"]) or {}
    labels = (namespace.get("metadata") or {}).get("labels") or {}
    return label_selector_matches((cq.get("spec") or {}).get("namespaceSelector"), labels)


def _assign(
    wl: dict[str, Any], cq: dict[str, Any], tree: QuotaTree, world: World
) -> tuple[list[dict[str, Any]] | None, str, list[dict[str, Any]]]:
    """The first flavor of each resource group that fits every pod set, in order (flavorassigner,
    without preemption); (assignments, "", requests) or (None, why, requests)."""
    node = tree.queues[cq["metadata"]["name"]]
    groups = (cq.get("spec") or {}).get("resourceGroups") or []
    assumed: dict[tuple[str, str], Decimal] = {}
    assignments: list[dict[str, Any]] = []
    requests_out: list[dict[str, Any]] = []
    failures: list[str] = []
    for podset in (wl.get("spec") or {}).get("podSets") or []:
        name = podset.get("name", k.DEFAULT_PODSET)
        requests = k.podset_requests(podset)
        requests_out.append(
            {"name": name, "resources": {r: k.format_amount(r, v) for r, v in sorted(requests.items())}}
        )
        pod_spec = ((podset.get("template") or {}).get("spec")) or {}
        flavors: dict[str, str] = {}
        reasons: list[str] = []
        covered = {r for g in groups for r in g.get("coveredResources") or []}
        for resource in sorted(set(requests) - covered):
            reasons.append(f"resource {resource} unavailable in ClusterQueue")
        for group in groups:
            needed = [r for r in group.get("coveredResources") or [] if r in requests]
            if not needed:
                continue
            chosen = None
            for flavor in group.get("flavors") or []:
                fname = flavor["name"]
                mismatch = _flavor_mismatch(pod_spec, world.flavors.get(fname))
                if mismatch:
                    reasons.append(f"flavor {fname} {mismatch}")
                    continue
                fits = True
                for resource in needed:
                    fr = (fname, resource)
                    before = assumed.get(fr, ZERO)
                    value = before + requests[resource]
                    ceiling = node.potential_available(fr)
                    if value > ceiling:
                        reasons.append(
                            f"insufficient quota for {resource} in flavor {fname}, previously considered "
                            f"podsets requests ({k.format_amount(resource, before)}) + current podset "
                            f"request ({k.format_amount(resource, requests[resource])}) > maximum capacity "
                            f"({k.format_amount(resource, ceiling)})"
                        )
                        fits = False
                    elif value > node.available(fr):
                        more = value - node.available(fr)
                        reasons.append(
                            f"insufficient unused quota for {resource} in flavor {fname}, "
                            f"{k.format_amount(resource, more)} more needed"
                        )
                        fits = False
                if fits:
                    chosen = fname
                    break
            if chosen is None:
                break
            for resource in needed:
                flavors[resource] = chosen
        if len(flavors) < len(requests):
            failures.append(f"couldn't assign flavors to pod set {name}: {', '.join(sorted(set(reasons)))}")
            continue
        for resource, fname in flavors.items():
            assumed[(fname, resource)] = assumed.get((fname, resource), ZERO) + requests[resource]
        assignments.append(
            {
                "name": name,
                "flavors": dict(sorted(flavors.items())),
                "resourceUsage": {r: k.format_amount(r, requests[r]) for r in sorted(flavors)},
                "count": int(podset.get("count", 1)),
            }
        )
    if failures:
        return None, "; ".join(failures), requests_out
    return assignments, "", requests_out


def _flavor_mismatch(pod_spec: dict[str, Any], flavor: dict[str, Any] | None) -> str:
    """Why a flavor cannot hold these pods: their node selector contradicts its node labels, or they
    do not tolerate one of its node taints (flavorassigner.checkFlavorForPodSets, simplified)."""
    spec = (flavor or {}).get("spec") or {}
    selector = pod_spec.get("nodeSelector") or {}
    for key, value in (spec.get("nodeLabels") or {}).items():
        if key in selector and selector[key] != value:
            return "doesn't match node affinity"
    tolerations = pod_spec.get("tolerations") or []
    for taint in spec.get("nodeTaints") or []:
        if not any(_tolerates(t, taint) for t in tolerations):
            value = f"={taint['value']}" if taint.get("value") else ""
            return f"untolerated taint {{{taint.get('key')}{value}:{taint.get('effect')}}} in flavor"
    return ""


def _tolerates(toleration: dict[str, Any], taint: dict[str, Any]) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("operator") == "Exists":
        return not toleration.get("key") or toleration["key"] == taint.get("key")
    return toleration.get("key") == taint.get("key") and toleration.get("value", "") == taint.get("value", "")


def _flavor_usage(
    groups: list[dict[str, Any]], workloads: list[dict[str, Any]], *, borrowed: bool
) -> list[dict[str, Any]]:
    """ClusterQueue/LocalQueue flavorsReservation and flavorsUsage: every flavor and resource of the
    queue's resource groups, in order, with the total held and (ClusterQueue) what is borrowed."""
    used: dict[tuple[str, str], Decimal] = {}
    for wl in workloads:
        for fr, value in k.admission_usage(wl).items():
            used[fr] = used.get(fr, ZERO) + value
    out = []
    for group in groups:
        for flavor in group.get("flavors") or []:
            resources = []
            for res in flavor.get("resources") or []:
                total = used.get((flavor["name"], res["name"]), ZERO)
                entry: dict[str, Any] = {"name": res["name"], "total": k.format_amount(res["name"], total)}
                if borrowed:
                    over = max(ZERO, total - amount(res.get("nominalQuota", 0)))
                    entry["borrowed"] = k.format_amount(res["name"], over)
                resources.append(entry)
            out.append({"name": flavor["name"], "resources": resources})
    return out


def _suspend(job: dict[str, Any]) -> None:
    job.setdefault("spec", {})["suspend"] = True


def _deactivate(wl: dict[str, Any]) -> None:
    wl.setdefault("spec", {})["active"] = False


def _drop_finalizer(wl: dict[str, Any]) -> None:
    meta = wl["metadata"]
    meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != k.FINALIZER]
    if not meta["finalizers"]:
        del meta["finalizers"]


def _restore_template(wl: dict[str, Any]) -> dict[str, Any] | None:
    """The pod template as the Job had it before admission: the Workload's first pod set keeps it."""
    podsets = (wl.get("spec") or {}).get("podSets") or []
    if not podsets:
        return None
    return json.loads(json.dumps(podsets[0].get("template") or {}))


def _template_directives_of(template: dict[str, Any]) -> tuple[Any, ...]:
    spec = template.get("spec") or {}
    return (
        (template.get("metadata") or {}).get("labels") or {},
        spec.get("nodeSelector") or {},
        spec.get("tolerations") or [],
    )


def _template_directives(job: dict[str, Any]) -> tuple[Any, ...]:
    return _template_directives_of((job.get("spec") or {}).get("template") or {})


def _set_template(job: dict[str, Any], template: dict[str, Any]) -> None:
    """Write the scheduling directives of `template` (labels, node selector, tolerations) on the Job."""
    target = job.setdefault("spec", {}).setdefault("template", {})
    labels, selector, tolerations = _template_directives_of(template)
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
