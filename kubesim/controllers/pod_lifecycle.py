"""The kubelet's and the Job/claim controllers' part of a pod's life, on bound pods.

- A bound Pending pod starts: Running, with started containers and ready conditions (HAMi's device
  plugin completes the bind protocol: bind-phase success). DRA pods start only once every claim is
  reserved for them.
- A Running pod with `kubesim.gpuplatform.io/run-seconds` succeeds that many seconds after this
  controller first saw it running (the clock is the ControllerSet's, so tests can advance it).
- A pod being deleted finishes: its finalizers are removed, so the store drops it.
- Claims are released when their pods end: finished or vanished pods leave reservedFor, an unreserved
  claim is deallocated, a deleting claim loses its delete-protection finalizer once deallocated, and
  a claim generated for a pod that finished is deleted (the resourceclaim controller's work).
"""

from __future__ import annotations

from typing import Any

from kubesim.controllers.base import Context
from kubesim.controllers.cache import TERMINAL
from kubesim.controllers.scheduler import claim_names
from kubesim.errors import ApiError
from kubesim.scenarios import hami
from kubesim.scenarios.dra import DELETE_PROTECTION
from kubesim.scenarios.pod_objects import RUN_SECONDS, TERMINATION_SECONDS

COMPONENT = "kubelet"


def _conditions(now: str, ready: bool) -> list[dict[str, Any]]:
    status = "True" if ready else "False"
    reason = None if ready else "PodCompleted"
    conditions = []
    for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"):
        entry: dict[str, Any] = {"type": kind, "lastProbeTime": None, "lastTransitionTime": now}
        entry["status"] = "True" if kind in ("Initialized", "PodScheduled") else status
        if reason and kind in ("Ready", "ContainersReady"):
            entry["reason"] = reason
        conditions.append(entry)
    return conditions


class PodLifecycle:
    name = "pod-lifecycle"

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._running_since: dict[tuple[str, str, str], float] = {}
        self._terminating_since: dict[tuple[str, str, str], float] = {}

    def reconcile(self) -> int:
        writes = 0
        for pod in self.ctx.cache.values("pods"):
            writes += self._step(pod)
        writes += self._release_claims()
        return writes

    def _step(self, pod: dict[str, Any]) -> int:
        ctx = self.ctx
        meta, spec, status = pod["metadata"], pod["spec"], pod.get("status") or {}
        namespace, name = meta.get("namespace", ""), meta["name"]
        if meta.get("deletionTimestamp"):
            if meta.get("finalizers"):
                ctx.patch("pods", namespace, name, {"metadata": {"finalizers": None}})
                return 1
            if meta.get("deletionGracePeriodSeconds"):
                return self._terminate(pod)
            return 0
        if not spec.get("nodeName"):
            return 0
        phase = status.get("phase", "Pending")
        if phase == "Pending":
            return self._start(pod)
        if phase == "Running":
            seconds = (meta.get("annotations") or {}).get(RUN_SECONDS)
            if not seconds:
                return 0
            since = self._running_since.setdefault((namespace, name, meta.get("uid", "")), ctx.clock())
            if ctx.clock() - since >= float(seconds):
                return self._finish(pod, "Succeeded")
        return 0

    def _terminate(self, pod: dict[str, Any]) -> int:
        """A graceful deletion: the containers got SIGTERM; once they stopped (TERMINATION_SECONDS after
        the request, at most the grace period), the kubelet deletes the pod for good (grace 0)."""
        meta = pod["metadata"]
        grace = int(meta["deletionGracePeriodSeconds"])
        stop_after = min(float((meta.get("annotations") or {}).get(TERMINATION_SECONDS) or 0), grace)
        # Timed by the controllers' clock from when this kubelet saw the deletion (tests move that clock).
        seen = self._terminating_since.setdefault(
            (meta["namespace"], meta["name"], meta.get("uid", "")), self.ctx.clock()
        )
        if self.ctx.clock() < seen + stop_after:
            return 0
        self._terminating_since.pop((meta["namespace"], meta["name"], meta.get("uid", "")), None)
        try:
            self.ctx.store.delete_entry("pods", meta["namespace"], meta["name"], grace_period=0)
        except ApiError as exc:
            if exc.status != 404:
                raise
        self.ctx.cache.put("pods", None, (meta["namespace"], meta["name"]))
        return 1

    def _start(self, pod: dict[str, Any]) -> int:
        ctx = self.ctx
        meta, spec = pod["metadata"], pod["spec"]
        namespace, name = meta["namespace"], meta["name"]
        names = claim_names(pod) if spec.get("resourceClaims") else []
        if names is None:
            return 0
        for claim_name in names:
            claim = ctx.cache.get("resourceclaims", namespace, claim_name)
            reserved = ((claim or {}).get("status") or {}).get("reservedFor") or []
            if not any(r.get("name") == name for r in reserved):
                return 0  # the kubelet refuses to start a pod whose claims are not reserved for it
        now = ctx.now_text()
        node = ctx.cache.get("nodes", None, spec["nodeName"])
        addresses = ((node or {}).get("status") or {}).get("addresses") or [{"address": "10.0.0.1"}]
        if meta.get("annotations", {}).get(hami.BIND_PHASE) == "allocating":
            ctx.patch(
                "pods",
                namespace,
                name,
                {"metadata": {"annotations": {hami.BIND_PHASE: "success", hami.TO_ALLOCATE: ";"}}},
            )
        statuses = [
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "imageID": "",
                "ready": True,
                "restartCount": 0,
                "started": True,
                "state": {"running": {"startedAt": now}},
            }
            for c in spec.get("containers") or []
        ]
        patch = {
            "status": {
                "phase": "Running",
                "conditions": _conditions(now, True),
                "startTime": now,
                "hostIP": addresses[0]["address"],
                "podIP": addresses[0]["address"],
                "containerStatuses": statuses,
            }
        }
        return 1 if ctx.patch("pods", namespace, name, patch, subresource="status") else 0

    def _finish(self, pod: dict[str, Any], phase: str) -> int:
        ctx = self.ctx
        now = ctx.now_text()
        statuses = []
        for c in (pod.get("status") or {}).get("containerStatuses") or []:
            started = ((c.get("state") or {}).get("running") or {}).get("startedAt", now)
            statuses.append(
                dict(
                    c,
                    ready=False,
                    started=False,
                    state={
                        "terminated": {
                            "exitCode": 0 if phase == "Succeeded" else 1,
                            "reason": "Completed" if phase == "Succeeded" else "Error",
                            "startedAt": started,
                            "finishedAt": now,
                        }
                    },
                )
            )
        patch = {
            "status": {"phase": phase, "conditions": _conditions(now, False), "containerStatuses": statuses}
        }
        meta = pod["metadata"]
        self._running_since.pop((meta["namespace"], meta["name"], meta.get("uid", "")), None)
        return 1 if ctx.patch("pods", meta["namespace"], meta["name"], patch, subresource="status") else 0

    def _release_claims(self) -> int:
        ctx = self.ctx
        writes = 0
        pods = ctx.cache.objects["pods"]
        # Claims that a pending, unbound pod still wants: the scheduler may be about to reserve them.
        awaited = {
            (pod["metadata"].get("namespace", ""), claim)
            for pod in pods.values()
            if pod["spec"].get("resourceClaims")
            and not pod["spec"].get("nodeName")
            and not pod["metadata"].get("deletionTimestamp")
            for claim in claim_names(pod) or []
        }
        for claim in ctx.cache.values("resourceclaims"):
            meta, status = claim["metadata"], claim.get("status") or {}
            namespace, name = meta["namespace"], meta["name"]
            reserved = status.get("reservedFor") or []
            alive = [r for r in reserved if self._consumer_alive(namespace, r)]
            owner = next((r for r in meta.get("ownerReferences") or [] if r.get("kind") == "Pod"), None)
            owner_pod = pods.get((namespace, owner["name"])) if owner else None
            owner_done = owner is not None and (
                owner_pod is None or (owner_pod.get("status") or {}).get("phase") in TERMINAL
            )
            if status.get("allocation") and not alive and (namespace, name) not in awaited:
                ctx.patch(
                    "resourceclaims",
                    namespace,
                    name,
                    {"status": {"allocation": None, "reservedFor": None}},
                    subresource="status",
                )
                writes += 1
            elif len(alive) != len(reserved):
                ctx.patch(
                    "resourceclaims",
                    namespace,
                    name,
                    {"status": {"reservedFor": alive or None}},
                    subresource="status",
                )
                writes += 1
            current = ctx.cache.get("resourceclaims", namespace, name)
            if current is None:
                continue
            allocated = bool((current.get("status") or {}).get("allocation"))
            finalizers = current["metadata"].get("finalizers") or []
            if (
                current["metadata"].get("deletionTimestamp")
                and not allocated
                and DELETE_PROTECTION in finalizers
            ):
                rest = [f for f in finalizers if f != DELETE_PROTECTION]
                ctx.patch("resourceclaims", namespace, name, {"metadata": {"finalizers": rest or None}})
                writes += 1
            elif owner_done and not current["metadata"].get("deletionTimestamp") and not alive:
                ctx.delete("resourceclaims", namespace, name)
                writes += 1
        return writes

    def _consumer_alive(self, namespace: str, ref: dict[str, Any]) -> bool:
        pod = self.ctx.cache.get("pods", namespace, ref.get("name", ""))
        if pod is None or (ref.get("uid") and pod["metadata"].get("uid") != ref.get("uid")):
            return False
        return (pod.get("status") or {}).get("phase") not in TERMINAL
