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
from typing import Any

from kubesim.controllers.base import Context, log
from kubesim.controllers.cache import key_of
from kubesim.controllers.kueue import objects as k
from kubesim.controllers.kueue import workload_status
from kubesim.controllers.kueue.assignment import assign, flavor_usage, namespace_matches
from kubesim.controllers.kueue.protocol import (
    World,
    deactivate,
    drop_finalizer,
    find_condition,
    format_time,
    parse_time,
    priority,
    queue_time,
    restore_template,
    set_template,
    strategy_checks,
    suspend,
    template_directives,
    template_directives_of,
)
from kubesim.controllers.kueue.quota import QuotaTree
from kubesim.errors import ApiError
from kubesim.strategy import WriteOptions

Mutation = Callable[[dict[str, Any]], None]


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
        names = [c["name"] for c in strategy_checks(cq)]
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
            if self._write("jobs", job, suspend, status=False, manager=k.MANAGER) is None:
                return 0
            self._event(job, "Stopped", message)
            return 1
        restore = restore_template(wl)
        if restore is not None and template_directives(job) != template_directives_of(restore):
            changed = self._write(
                "jobs", job, lambda j: set_template(j, restore), status=False, manager=k.MANAGER
            )
            return 1 if changed is not None else 0
        return 0

    def _start_job(self, job: dict[str, Any], wl: dict[str, Any], world: World) -> int:
        admission = (wl.get("status") or {}).get("admission") or {}
        template = restore_template(wl) or {}
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
            set_template(current, template)
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
                if self._write("workloads", wl, drop_finalizer, status=False, manager=k.MANAGER):
                    writes += 1
                continue
            if meta.get("deletionTimestamp"):
                continue
            if (wl.get("spec") or {}).get("active", True) and k.is_true(wl, k.DEACTIVATION_TARGET):
                if self._write("workloads", wl, deactivate, status=False, manager=k.MANAGER):
                    writes += 1
                continue
            job = self._owner_job(wl, world)
            events: list[tuple[str, str, bool]] = []
            new = self._write(
                "workloads",
                wl,
                functools.partial(
                    workload_status.reconcile,
                    job=job,
                    world=world,
                    events=events,
                    clock=self.ctx.clock,
                    due=self._due,
                ),
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
        pending.sort(key=lambda p: (-priority(p[0]), queue_time(p[0]), key_of(p[0])))
        blocked: set[str] = set()
        writes = 0
        for wl, cq in pending:
            cq_name = cq["metadata"]["name"]
            if cq_name in blocked:
                continue
            assignment, message, requests = assign(wl, cq, tree, world)
            if not namespace_matches(wl, cq, self.ctx.store):
                assignment, message = None, "Workload namespace doesn't match ClusterQueue selector"
            if assignment is None:
                if (cq.get("spec") or {}).get("queueingStrategy") == "StrictFIFO":
                    blocked.add(cq_name)
                new = self._write(
                    "workloads",
                    wl,
                    functools.partial(
                        workload_status.not_fit, message=message, requests=requests, clock=self.ctx.clock
                    ),
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
                functools.partial(
                    workload_status.reserve,
                    cq=cq,
                    assignments=assignment,
                    events=events,
                    clock=self.ctx.clock,
                ),
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
        requeue_at = parse_time((status.get("requeueState") or {}).get("requeueAt"))
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
        now = format_time(self.ctx.clock())
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
                status["flavorsReservation"] = flavor_usage(groups, held, borrowed=True)
                admitted = [w for w in held if k.is_true(w, k.ADMITTED)]
                status["flavorsUsage"] = flavor_usage(groups, admitted, borrowed=True)
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
                status["flavorsReservation"] = flavor_usage(groups, held, borrowed=False)
                admitted = [w for w in held if k.is_true(w, k.ADMITTED)]
                status["flavorsUsage"] = flavor_usage(groups, admitted, borrowed=False)
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
