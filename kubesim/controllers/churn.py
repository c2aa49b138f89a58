"""Random but realistic change, at a steady rate, deterministic from the seed.

Each action is one thing that happens on a busy GPU cluster: a tenant submits a GPU pod (for the
resource a random node offers, so the scheduler has work), a pod completes or is deleted, a claim is
created for later or deleted, a node flaps Ready, a node is cordoned or uncordoned, or an operator
touches a node label. Choices iterate the cache in key order, so one seed replays the same history.
"""

from __future__ import annotations

from typing import Any

from kubesim.controllers.base import Context
from kubesim.scenarios import hami
from kubesim.scenarios.dra import GPU_CLASS, MIG_CLASS, claim_request
from kubesim.scenarios.pod_objects import IMAGES, RUN_SECONDS
from kubesim.scenarios.workloads import pick

TENANT_EXCLUDED = ("kube-system", "gpu-operator", "default", "kube-public", "kube-node-lease")
# Pods come and go at the same rate (deletions prefer finished pods, as the pod GC does), so a long
# churn run keeps the cluster's size steady.
ACTIONS = (
    "create-pod",
    "create-pod",
    "complete-pod",
    "delete-pod",
    "delete-pod",
    "create-claim",
    "delete-claim",
    "node-ready-flap",
    "cordon",
    "label-node",
)
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
MAX_ACTIONS_PER_PASS = 100
# A busy but healthy cluster has a few nodes down or drained, not most: a flap or a cordon takes a
# node out only while fewer than this share (at least one) are out, and otherwise brings one back.
# (Toggling a random node was a random walk that settled at about half the nodes not ready.)
UNHEALTHY_SHARE = 0.1


class Churn:
    name = "churn"

    def __init__(self, ctx: Context, *, rate: float = 5.0) -> None:
        self.ctx = ctx
        self.rate = rate  # actions per second of the ControllerSet's clock
        self._last: float | None = None
        self._owed = 0.0
        self._counter = 0

    def reconcile(self) -> int:
        now = self.ctx.clock()
        if self._last is None:
            self._last = now
            self._owed = 1.0  # one action on the first pass, so run_once() always shows churn
        # A paused process or a test's clock jump must not turn into a flood of changes at once.
        self._owed = min(self._owed + (now - self._last) * self.rate, MAX_ACTIONS_PER_PASS)
        self._last = now
        writes = 0
        while self._owed >= 1.0:
            self._owed -= 1.0
            writes += self.act(pick(self.ctx.rng, ACTIONS))
        return writes

    def act(self, action: str) -> int:
        handler = getattr(self, "_" + action.replace("-", "_"))
        return int(handler())

    def _namespaces(self) -> list[str]:
        names = {p["metadata"]["namespace"] for p in self.ctx.cache.objects["pods"].values()}
        tenants = sorted(n for n in names if n not in TENANT_EXCLUDED)
        return tenants or ["default"]

    def _create_pod(self) -> bool:
        ctx = self.ctx
        nodes = [
            n
            for n in ctx.cache.values("nodes")
            if (n["metadata"].get("labels") or {}).get("nvidia.com/gpu.present")
        ]
        if not nodes:
            return False
        node = pick(ctx.rng, nodes)
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        gpu_resources = sorted(r for r, v in allocatable.items() if r.startswith("nvidia.com/") and v != "0")
        self._counter += 1
        namespace = pick(ctx.rng, self._namespaces())
        name = f"churn-{self._counter:06d}-{ctx.rng.getrandbits(20):05x}"
        resources: dict[str, str] = {}
        scheduler = None
        claims = None
        hami_node = hami.REGISTER in (node["metadata"].get("annotations") or {})
        if hami_node:
            resources = {
                "nvidia.com/gpu": "1",
                hami.GPUMEM: str(pick(ctx.rng, (2048, 4096, 8192))),
                hami.GPUCORES: str(pick(ctx.rng, (10, 20, 30))),
            }
            scheduler = hami.HAMI_SCHEDULER
        elif gpu_resources:
            resources = {pick(ctx.rng, gpu_resources): "1"}
        else:
            claim_name = f"{name}-gpu"
            device_class = (
                MIG_CLASS
                if (node["metadata"].get("labels") or {})
                .get("nvidia.com/mig.config", "")
                .startswith("all-1g")
                else GPU_CLASS
            )
            created = ctx.create(
                "resourceclaims",
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceClaim",
                    "metadata": {"name": claim_name, "namespace": namespace},
                    "spec": {"devices": {"requests": [claim_request(device_class, 1, None)]}},
                },
            )
            if created is None:
                return False
            claims = [{"name": "gpu", "resourceClaimName": claim_name}]
        container: dict[str, Any] = {
            "name": "main",
            "image": IMAGES["train"],
            "resources": {"requests": {"cpu": "1", "memory": "4Gi", **resources}, "limits": dict(resources)},
        }
        if claims:
            container["resources"]["claims"] = [{"name": "gpu"}]
        spec: dict[str, Any] = {
            "containers": [container],
            "restartPolicy": "Never",
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        }
        if scheduler:
            spec["schedulerName"] = scheduler
        if claims:
            spec["resourceClaims"] = claims
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {"app.kubernetes.io/name": "churn"},
                "annotations": {RUN_SECONDS: str(pick(ctx.rng, (30, 60, 300, 900)))},
            },
            "spec": spec,
        }
        return ctx.create("pods", pod) is not None

    def _tenant_pods(self, phases: tuple[str, ...]) -> list[dict[str, Any]]:
        return [
            p
            for p in self.ctx.cache.values("pods")
            if p["metadata"]["namespace"] not in TENANT_EXCLUDED
            and (p.get("status") or {}).get("phase") in phases
            and not p["metadata"].get("deletionTimestamp")
        ]

    def _complete_pod(self) -> bool:
        running = self._tenant_pods(("Running",))
        if not running:
            return False
        pod = pick(self.ctx.rng, running)
        meta = pod["metadata"]
        patch = {"status": {"phase": "Succeeded"}}
        return (
            self.ctx.patch("pods", meta["namespace"], meta["name"], patch, subresource="status") is not None
        )

    def _delete_pod(self) -> bool:
        pods = self._tenant_pods(("Succeeded", "Failed")) or self._tenant_pods(("Running", "Pending"))
        if not pods:
            return False
        pod = pick(self.ctx.rng, pods)
        self.ctx.delete("pods", pod["metadata"]["namespace"], pod["metadata"]["name"])
        return True

    def _create_claim(self) -> bool:
        self._counter += 1
        namespace = pick(self.ctx.rng, self._namespaces())
        claim = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": f"churn-claim-{self._counter:06d}", "namespace": namespace},
            "spec": {"devices": {"requests": [claim_request(GPU_CLASS, 1, None)]}},
        }
        return self.ctx.create("resourceclaims", claim) is not None

    def _delete_claim(self) -> bool:
        free = [
            c
            for c in self.ctx.cache.values("resourceclaims")
            if not (c.get("status") or {}).get("reservedFor") and not c["metadata"].get("deletionTimestamp")
        ]
        if not free:
            return False
        claim = pick(self.ctx.rng, free)
        self.ctx.delete("resourceclaims", claim["metadata"]["namespace"], claim["metadata"]["name"])
        return True

    def _out_or_back(self, nodes: list[dict[str, Any]], out: list[dict[str, Any]]) -> dict[str, Any]:
        """The node to toggle: any node while few are out, else one of those out (brought back)."""
        return pick(self.ctx.rng, out if len(out) >= max(1, int(len(nodes) * UNHEALTHY_SHARE)) else nodes)

    def _node_ready_flap(self) -> bool:
        nodes = self.ctx.cache.values("nodes")
        if not nodes:
            return False
        node = self._out_or_back(nodes, [n for n in nodes if not _ready(n)])
        now = self.ctx.now_text()
        conditions = []
        for condition in (node.get("status") or {}).get("conditions") or []:
            if condition.get("type") == "Ready":
                ready = condition.get("status") == "True"
                condition = dict(
                    condition,
                    lastTransitionTime=now,
                    lastHeartbeatTime=now,
                    status="Unknown" if ready else "True",
                    reason="NodeStatusUnknown" if ready else "KubeletReady",
                    message="Kubelet stopped posting node status."
                    if ready
                    else "kubelet is posting ready status",
                )
            conditions.append(condition)
        return (
            self.ctx.patch(
                "nodes",
                None,
                node["metadata"]["name"],
                {"status": {"conditions": conditions}},
                subresource="status",
            )
            is not None
        )

    def _cordon(self) -> bool:
        nodes = self.ctx.cache.values("nodes")
        if not nodes:
            return False
        node = self._out_or_back(nodes, [n for n in nodes if (n.get("spec") or {}).get("unschedulable")])
        spec = node.get("spec") or {}
        cordoned = bool(spec.get("unschedulable"))
        taints = [t for t in spec.get("taints") or [] if t.get("key") != UNSCHEDULABLE_TAINT]
        if not cordoned:
            taints.append(
                {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule", "timeAdded": self.ctx.now_text()}
            )
        patch = {"spec": {"unschedulable": None if cordoned else True, "taints": taints or None}}
        return self.ctx.patch("nodes", None, node["metadata"]["name"], patch) is not None

    def _label_node(self) -> bool:
        nodes = self.ctx.cache.values("nodes")
        if not nodes:
            return False
        node = pick(self.ctx.rng, nodes)
        value = str(int(self.ctx.clock()))
        patch = {"metadata": {"labels": {"nvidia.com/gfd.timestamp": value}}}
        return self.ctx.patch("nodes", None, node["metadata"]["name"], patch) is not None


def _ready(node: dict[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
