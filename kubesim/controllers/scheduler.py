"""kube-scheduler (plus HAMi's scheduler and DRA's DynamicResources plugin) for pending GPU pods.

Binds a pending pod to a node that passes the filters (cordon, taints, nodeSelector / required node
affinity, resources within allocatable, HAMi per-GPU memory and cores on GPUs it has not cordoned
(`hami.io/device-cordon`), DRA claims allocatable on the
node), preferring the fullest node (GPU binpacking). A pod that fits nowhere gets
PodScheduled=False/Unschedulable with the scheduler's message and a FailedScheduling event, and is
retried only when capacity may have changed (a node, slice or claim changed, or a pod ended).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from kubesim.controllers.base import Context
from kubesim.controllers.cache import TERMINAL
from kubesim.controllers.cel_env import SelectorEvaluator
from kubesim.controllers.dra_allocation import Allocator
from kubesim.errors import ApiError
from kubesim.scenarios import hami
from kubesim.scenarios.dra import DELETE_PROTECTION, node_selector_for
from kubesim.scenarios.scheduling_rules import (
    node_allocatable,
    pod_requests,
    resource_reasons,
    static_reason,
    unschedulable_message,
)

SCHEDULERS = ("default-scheduler", hami.HAMI_SCHEDULER)
CANNOT_ALLOCATE_CLAIMS = "cannot allocate all claims"
WAITING_FOR_CLAIM = "waiting for resource claim to be created"
HAMI_UNREGISTERED = "node unregistered"
HAMI_INSUFFICIENT = "AllocatedCardsInsufficientRequest"
MAX_BINDS_PER_PASS = 2000  # keeps one pass short on huge backlogs; the next pass continues


def claim_names(pod: dict[str, Any]) -> list[str] | None:
    """Names of the ResourceClaims a pod uses; None while a template's claim is not created yet."""
    names = []
    statuses = {
        s.get("name"): s.get("resourceClaimName")
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
    }
    for ref in (pod.get("spec") or {}).get("resourceClaims") or []:
        if ref.get("resourceClaimName"):
            names.append(ref["resourceClaimName"])
        elif ref.get("resourceClaimTemplateName"):
            generated = statuses.get(ref.get("name"))
            if not generated:
                return None
            names.append(generated)
    return names


def holds_resources(pod: dict[str, Any]) -> bool:
    return bool(pod["spec"].get("nodeName")) and (pod.get("status") or {}).get("phase") not in TERMINAL


class Scheduler:
    name = "scheduler"

    def __init__(self, ctx: Context, *, dra_enabled: bool = True) -> None:
        self.ctx = ctx
        self.dra_enabled = dra_enabled
        self.evaluator = SelectorEvaluator()
        self._matches: dict[tuple[Any, ...], Any] = {}
        self._request_cache: dict[tuple[str, str], tuple[str, dict[str, int]]] = {}
        self._failed_shapes: dict[str, str] = {}
        self._static: dict[tuple[str, str], str | None] = {}
        self._claim_failures: set[tuple[str, str]] = set()
        self._attempted: dict[tuple[str, str], int] = {}  # pod -> capacity epoch of its last failure

    def _due(self) -> list[dict[str, Any]]:
        cache = self.ctx.cache
        due = []
        for pod in cache.objects["pods"].values():
            spec, meta = pod["spec"], pod["metadata"]
            if spec.get("nodeName") or meta.get("deletionTimestamp"):
                continue
            if (pod.get("status") or {}).get("phase", "Pending") != "Pending":
                continue
            if spec.get("schedulerName", "default-scheduler") not in SCHEDULERS:
                continue
            key = (meta.get("namespace", ""), meta["name"])
            if self._attempted.get(key) == cache.capacity_epoch:
                continue
            due.append(pod)
        due.sort(
            key=lambda p: (
                p["metadata"].get("creationTimestamp", ""),
                p["metadata"].get("namespace", ""),
                p["metadata"]["name"],
            )
        )
        return due[:MAX_BINDS_PER_PASS]

    def reconcile(self) -> int:
        due = self._due()
        if not due:
            return 0
        cache = self.ctx.cache
        nodes = cache.values("nodes")
        free, pods_free, hami_free = self._free(nodes)
        allocator = Allocator(cache, self.evaluator, self._matches) if self.dra_enabled else None
        # Within one pass capacity only shrinks (we bind, nothing ends), so a pod shape that fit
        # nowhere still fits nowhere, and a node's filter verdict for one pod shape stays the same.
        self._failed_shapes = {}
        self._static = {}
        self._claim_failures = set()
        writes = 0
        for pod in due:
            writes += self._schedule(pod, nodes, free, pods_free, hami_free, allocator)
        return writes

    def _requests(self, pod: dict[str, Any]) -> dict[str, int]:
        """pod_requests, memoised per resourceVersion: the pass walks every bound pod."""
        key = (pod["metadata"].get("namespace", ""), pod["metadata"]["name"])
        version = pod["metadata"].get("resourceVersion", "")
        cached = self._request_cache.get(key)
        if cached is None or cached[0] != version:
            cached = (version, pod_requests(pod["spec"]))
            self._request_cache[key] = cached
        return cached[1]

    def _free(
        self, nodes: list[dict[str, Any]]
    ) -> tuple[dict[str, dict[str, int]], dict[str, int], dict[str, dict[str, list[int]]]]:
        free = {n["metadata"]["name"]: node_allocatable(n) for n in nodes}
        pods_free = {name: alloc.get("pods", 110) for name, alloc in free.items()}
        hami_free: dict[str, dict[str, list[int]]] = {}
        for node in nodes:
            annotations = node["metadata"].get("annotations") or {}
            register = annotations.get(hami.REGISTER)
            if register:
                # A GPU HAMi cordons is not offered, as an unhealthy one is not.
                cordoned = hami.cordoned(annotations)
                hami_free[node["metadata"]["name"]] = {
                    d.uuid: [d.split_count, d.memory_mib, d.cores]
                    for d in hami.parse_register(register)
                    if d.healthy and d.uuid not in cordoned
                }
        for pod in self.ctx.cache.objects["pods"].values():
            if not holds_resources(pod):
                continue
            node = pod["spec"]["nodeName"]
            if node not in free:
                continue
            pods_free[node] -= 1
            for resource, amount in self._requests(pod).items():
                if resource in free[node]:
                    free[node][resource] -= amount
            allocated = (pod["metadata"].get("annotations") or {}).get(hami.ALLOCATED)
            if allocated and node in hami_free:
                for share in hami.parse_allocated(allocated):
                    device = hami_free[node].get(share.uuid)
                    if device:
                        device[0] -= 1
                        device[1] -= share.memory_mib
                        device[2] -= share.cores
        return free, pods_free, hami_free

    def _schedule(
        self,
        pod: dict[str, Any],
        nodes: list[dict[str, Any]],
        free: dict[str, dict[str, int]],
        pods_free: dict[str, int],
        hami_free: dict[str, dict[str, list[int]]],
        allocator: Allocator | None,
    ) -> int:
        spec = pod["spec"]
        requests = pod_requests(spec)
        wants_hami = (
            any(r in requests for r in hami.HAMI_RESOURCES)
            or spec.get("schedulerName") == hami.HAMI_SCHEDULER
        )
        claims = claim_names(pod) if spec.get("resourceClaims") else []
        placement = json.dumps(
            [spec.get("nodeSelector"), spec.get("affinity"), spec.get("tolerations")], sort_keys=True
        )
        shape = json.dumps(
            [placement, sorted(requests.items()), wants_hami, self._claims_signature(pod, claims)],
            sort_keys=True,
        )
        if shape in self._failed_shapes:
            return self._unschedulable(pod, self._failed_shapes[shape])
        extended = {
            r: a for r, a in requests.items() if r.startswith("nvidia.com/") and r not in hami.HAMI_RESOURCES
        }
        feasible: list[tuple[int, str, Any]] = []
        for node in nodes:
            node_name = node["metadata"]["name"]
            # Cheap prefilters first; the full filters (and their reasons) only for nodes that pass them.
            node_free = free[node_name]
            if any(node_free.get(r, 0) < a for r, a in extended.items()):
                continue
            if claims and (allocator is None or node_name not in allocator.pools_by_node):
                continue
            if wants_hami and node_name not in hami_free:
                continue
            reason, plan = self._filter(
                pod, node, placement, shape, requests, claims, free, pods_free, hami_free, allocator
            )
            if reason is None:
                gpu_free = sum(v for k, v in node_free.items() if k.startswith("nvidia.com/"))
                feasible.append((gpu_free, node_name, plan))
        if not feasible:
            reasons: Counter[tuple[str, ...]] = Counter()
            for node in nodes:
                reason, _ = self._filter(
                    pod, node, placement, shape, requests, claims, free, pods_free, hami_free, allocator
                )
                if reason is not None:
                    reasons[reason] += 1
            message = unschedulable_message(reasons, len(nodes))
            self._failed_shapes[shape] = message
            return self._unschedulable(pod, message)
        feasible.sort(key=lambda item: (item[0], item[1]))
        _, node_name, plan = feasible[0]
        return self._bind(pod, node_name, requests, plan, free, pods_free, hami_free, allocator)

    def _claims_signature(self, pod: dict[str, Any], claims: list[str] | None) -> Any:
        """What the pod's claims ask for (spec, and the node an allocated claim is pinned to)."""
        if claims is None:
            return "waiting"
        signature: list[Any] = []
        for claim_name in claims:
            claim = self.ctx.cache.get("resourceclaims", pod["metadata"]["namespace"], claim_name)
            if claim is None:
                signature.append(["missing", claim_name])
                continue
            allocation = (claim.get("status") or {}).get("allocation")
            pinned = json.dumps(allocation.get("nodeSelector"), sort_keys=True) if allocation else None
            signature.append([claim.get("spec"), pinned, claim_name if allocation else None])
        return signature

    def _filter(
        self,
        pod: dict[str, Any],
        node: dict[str, Any],
        placement: str,
        shape: str,
        requests: dict[str, int],
        claims: list[str] | None,
        free: dict[str, dict[str, int]],
        pods_free: dict[str, int],
        hami_free: dict[str, dict[str, list[int]]],
        allocator: Allocator | None,
    ) -> tuple[tuple[str, ...] | None, Any]:
        """(None, plan) when the pod fits the node, else (reasons, None)."""
        node_name = node["metadata"]["name"]
        static_key = (placement, node_name)
        if static_key not in self._static:
            self._static[static_key] = static_reason(pod["spec"], node)
        static = self._static[static_key]
        if static:
            return (static,), None
        fit = resource_reasons(requests, free[node_name], pods_free[node_name])
        if fit:
            return tuple(fit), None
        plan: Any = None
        wants_hami = any(r in requests for r in hami.HAMI_RESOURCES) or pod["spec"].get("schedulerName") == (
            hami.HAMI_SCHEDULER
        )
        if wants_hami:
            plan = self._hami_plan(requests, hami_free.get(node_name))
            if isinstance(plan, str):
                return (plan,), None
        if claims is None:
            return (WAITING_FOR_CLAIM,), None
        if claims:
            if (shape, node_name) in self._claim_failures:
                return (CANNOT_ALLOCATE_CLAIMS,), None
            plan = self._claim_plan(pod, claims, node_name, allocator)
            if plan is None:
                self._claim_failures.add((shape, node_name))
                return (CANNOT_ALLOCATE_CLAIMS,), None
        return None, plan

    @staticmethod
    def _hami_plan(
        requests: dict[str, int], devices: dict[str, list[int]] | None
    ) -> list[hami.AllocatedShare] | str:
        """HAMi's device fit: `nvidia.com/gpu` devices, each with a free slot, the memory and the cores."""
        if devices is None:
            return HAMI_UNREGISTERED
        count = max(requests.get("nvidia.com/gpu", 1), 1)
        cores = requests.get(hami.GPUCORES, 0)
        shares = []
        # Binpack across GPUs like HAMi's default: the device with the least free cores first.
        for uuid, (slots, memory, free_cores) in sorted(devices.items(), key=lambda d: (d[1][2], d[0])):
            want_memory = requests.get(hami.GPUMEM, 0)
            if hami.GPUMEM_PERCENTAGE in requests:
                want_memory = memory * requests[hami.GPUMEM_PERCENTAGE] // 100
            if slots > 0 and memory >= want_memory and free_cores >= cores:
                shares.append(hami.AllocatedShare(uuid, want_memory, cores))
            if len(shares) == count:
                return shares
        return HAMI_INSUFFICIENT

    def _claim_plan(
        self, pod: dict[str, Any], claims: list[str], node: str, allocator: Allocator | None
    ) -> dict[str, list[dict[str, Any]] | None] | None:
        """Per claim: results to write (None: already allocated here). None when a claim cannot be met."""
        if allocator is None:
            return None
        plan: dict[str, list[dict[str, Any]] | None] = {}
        taken: list[dict[str, Any]] = []
        try:
            for claim_name in claims:
                claim = self.ctx.cache.get("resourceclaims", pod["metadata"]["namespace"], claim_name)
                if claim is None or claim["metadata"].get("deletionTimestamp"):
                    return None
                allocation = (claim.get("status") or {}).get("allocation")
                if allocation:
                    terms = (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []
                    values = [
                        v for t in terms for f in t.get("matchFields") or [] for v in f.get("values") or []
                    ]
                    if values and node not in values:
                        return None
                    plan[claim_name] = None
                    continue
                results = allocator.allocate(claim, node)
                if results is None:
                    return None
                for result in results:
                    # Two claims of one pod must not get the same device (nor more than a shared one has).
                    allocator.take_result(result)
                    taken.append(result)
                plan[claim_name] = results
        finally:
            for result in taken:
                allocator.release_result(result)
        return plan

    def _bind(
        self,
        pod: dict[str, Any],
        node: str,
        requests: dict[str, int],
        plan: Any,
        free: dict[str, dict[str, int]],
        pods_free: dict[str, int],
        hami_free: dict[str, dict[str, list[int]]],
        allocator: Allocator | None,
    ) -> int:
        ctx = self.ctx
        namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        writes = 0
        if isinstance(plan, dict):
            for claim_name, results in plan.items():
                writes += self._reserve(pod, claim_name, node, results, allocator)
        if isinstance(plan, list):
            epoch = int(ctx.clock())
            annotations = hami.pod_annotations(node, plan, epoch, bound=False)
            if ctx.patch("pods", namespace, name, {"metadata": {"annotations": annotations}}) is None:
                return writes
            writes += 1
            for share in plan:
                device = hami_free[node][share.uuid]
                device[0] -= 1
                device[1] -= share.memory_mib
                device[2] -= share.cores
        try:
            bound = ctx.store.bind(namespace, name, node)
        except ApiError:
            # 409/404: someone else bound or deleted the pod first; the next pass sees its real state.
            ctx.cache.put("pods", ctx.store.get("pods", namespace, name), (namespace, name))
            return writes
        ctx.cache.put("pods", bound)
        ctx.event(
            bound,
            "Normal",
            "Scheduled",
            f"Successfully assigned {namespace}/{name} to {node}",
            pod["spec"].get("schedulerName", "default-scheduler"),
        )
        pods_free[node] -= 1
        for resource, amount in requests.items():
            if resource in free[node]:
                free[node][resource] -= amount
        self._attempted.pop((namespace, name), None)
        return writes + 1

    def _reserve(
        self,
        pod: dict[str, Any],
        claim_name: str,
        node: str,
        results: list[dict[str, Any]] | None,
        allocator: Allocator | None,
    ) -> int:
        """Allocate (when `results`) and reserve the claim for the pod, as the scheduler does when binding."""
        ctx = self.ctx
        namespace = pod["metadata"]["namespace"]
        claim = ctx.cache.get("resourceclaims", namespace, claim_name)
        if claim is None:
            return 0
        writes = 0
        if DELETE_PROTECTION not in (claim["metadata"].get("finalizers") or []):
            finalizers = [*(claim["metadata"].get("finalizers") or []), DELETE_PROTECTION]
            if ctx.patch("resourceclaims", namespace, claim_name, {"metadata": {"finalizers": finalizers}}):
                writes += 1
        reserved = list((claim.get("status") or {}).get("reservedFor") or [])
        consumer = {
            "resource": "pods",
            "name": pod["metadata"]["name"],
            "uid": pod["metadata"].get("uid", ""),
        }
        if consumer not in reserved:
            reserved.append(consumer)
        status: dict[str, Any] = {"reservedFor": reserved}
        if results is not None:
            status["allocation"] = {"devices": {"results": results}, "nodeSelector": node_selector_for(node)}
            if allocator is not None:
                for result in results:
                    allocator.take_result(result)
        if ctx.patch("resourceclaims", namespace, claim_name, {"status": status}, subresource="status"):
            writes += 1
        return writes

    def _unschedulable(self, pod: dict[str, Any], message: str) -> int:
        ctx = self.ctx
        namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        self._attempted[(namespace, name)] = ctx.cache.capacity_epoch
        conditions = [
            c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") != "PodScheduled"
        ]
        current = next(
            (c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled"),
            None,
        )
        if current and current.get("reason") == "Unschedulable" and current.get("message") == message:
            return 0
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": message,
                "lastProbeTime": None,
                "lastTransitionTime": ctx.now_text(),
            }
        )
        updated = ctx.patch(
            "pods", namespace, name, {"status": {"conditions": conditions}}, subresource="status"
        )
        if updated is None:
            return 0
        ctx.event(
            updated,
            "Warning",
            "FailedScheduling",
            message,
            pod["spec"].get("schedulerName", "default-scheduler"),
        )
        # Our own write bumped nothing capacity-related, so the epoch recorded above still holds.
        return 1
