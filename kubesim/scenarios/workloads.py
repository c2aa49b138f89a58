"""Tenant GPU pods on device-plugin nodes (exclusive, MIG, time-slicing, MPS, HAMi).

Each node gets `pods_per_node` tenant pods: some hold GPU units (running, starting, or terminating
with a finalizer), never more than the node advertises; the rest are finished, failed, or pending
(freshly created, or unschedulable because they ask for more than any node offers). DRA nodes are
handled in `claims.py`.
"""

from __future__ import annotations

import bisect
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kubesim.scenarios import hami
from kubesim.scenarios.device_plugin_view import GPU, MIG_RESOURCE_PREFIX
from kubesim.scenarios.gpu_models import MODELS
from kubesim.scenarios.ids import Timestamps, random_uuid
from kubesim.scenarios.nodes import BuiltNode
from kubesim.scenarios.pod_objects import PodFactory
from kubesim.scenarios.scheduling_rules import (
    node_allocatable,
    pod_requests,
    resource_reasons,
    static_reason,
    unschedulable_message,
)
from kubesim.scenarios.truth import Allocation, Truth

T = TypeVar("T")
HOLDER_KINDS = ("train", "train", "finetune", "infer", "triton", "notebook")
OTHER_KINDS = ("train", "eval", "finetune", "notebook")
RUN_SECONDS_CHOICES = (600, 1800, 3600, 7200, 14400)


@dataclass
class Holder:
    """A pod that holds GPU units on a node."""

    resources: tuple[tuple[str, str], ...]
    rows: list[tuple[str, int]]  # (resource, count) for the allocation ledger
    unit: str
    selector: tuple[tuple[str, str], ...] = ()
    shares: list[hami.AllocatedShare] = field(default_factory=list)


@dataclass
class WorkloadContext:
    rng: random.Random
    ts: Timestamps
    factory: PodFactory
    truth: Truth
    objects: list[dict[str, Any]]
    namespaces: list[str]
    namespace_weights: list[float]
    all_nodes: list[dict[str, Any]]
    pod_counter: int = 0
    message_cache: dict[tuple[Any, ...], str] = field(default_factory=dict)
    # Values equal between objects (claim specs, node selectors, pod IPs), built once and shared.
    shared: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    allocatable: dict[str, dict[str, int]] = field(default_factory=dict)
    _cumulative: list[float] = field(default_factory=list)

    def namespace(self) -> str:
        if not self._cumulative:
            total = 0.0
            for weight in self.namespace_weights:
                total += weight
                self._cumulative.append(total)
        return self.namespaces[
            bisect.bisect_right(self._cumulative, self.rng.random() * self._cumulative[-1])
        ]

    def max_allocatable(self, resource: str) -> int:
        key = ("max-allocatable", resource)
        if key not in self.shared:
            values = [int(n["status"]["allocatable"].get(resource, "0")) for n in self.all_nodes]
            self.shared[key] = max(values, default=0)
        return int(self.shared[key])

    def pick(self, options: Sequence[T]) -> T:
        """rng.choice without its rejection sampling: several times faster, and just as deterministic."""
        return options[int(self.rng.random() * len(options))]

    def pod_name(self, kind: str) -> str:
        self.pod_counter += 1
        return f"{kind}-{self.pod_counter:06d}"

    def pod_uid(self) -> str:
        return random_uuid(self.rng)


def pick(rng: random.Random, options: Sequence[T]) -> T:
    return options[int(rng.random() * len(options))]


def node_ip(node: dict[str, Any]) -> str:
    return str(node["status"]["addresses"][0]["address"])


_POD_IPS: dict[tuple[str, int], str] = {}


def pod_ip(node: dict[str, Any], index: int) -> str:
    base = node["spec"]["podCIDR"].rsplit(".", 1)[0]
    key = (base, 2 + index % 250)
    text = _POD_IPS.get(key)
    if text is None:
        text = _POD_IPS[key] = f"{base}.{key[1]}"
    return text


def holders_for(built: BuiltNode, rng: random.Random, limit: int, utilization: float) -> list[Holder]:
    """GPU-holding pods for a device-plugin node, within what it advertises."""
    truth = built.truth
    model = MODELS[truth.model]
    holders: list[Holder] = []
    if truth.mechanism == "hami":
        return _hami_holders(built, rng, limit, utilization)
    if truth.mechanism == "mig-mixed":
        free = {f"{MIG_RESOURCE_PREFIX}{p}": n for p, n in truth.mig_profiles.items()}
        total = sum(free.values())
        while len(holders) < limit and total - sum(free.values()) < utilization * total:
            choices = [r for r, n in free.items() if n > 0]
            if not choices:
                break
            resource = pick(rng, sorted(choices))
            free[resource] -= 1
            profile = resource[len(MIG_RESOURCE_PREFIX) :]
            holders.append(Holder(((resource, "1"),), [(resource, 1)], f"mig:{model.product}:{profile}"))
        return holders
    resource, capacity = next(((r, n) for r, n in truth.resources.items() if n > 0), (GPU, 0))
    if truth.mechanism == "mig-single":
        profile = next(iter(truth.mig_profiles))
        unit = f"mig:{model.product}:{profile}"
        selector: tuple[tuple[str, str], ...] = (
            ("nvidia.com/gpu.product", f"{model.product}-MIG-{profile}"),
        )
        sizes: tuple[int, ...] = (1, 1, 1, 2)
    elif truth.mechanism in ("time-slicing", "mps"):
        unit = f"{truth.mechanism}:{model.product}:{truth.replicas}"
        suffix = "-SHARED" if resource == GPU else ""
        selector = (("nvidia.com/gpu.product", f"{model.product}{suffix}"),)
        sizes = (1,)
    else:
        unit = f"gpu:{model.product}"
        selector = (("nvidia.com/gpu.product", model.product),) if rng.random() < 0.5 else ()
        sizes = (1, 1, 1, 1, 2, 2, 4, 8)
    used = 0
    while len(holders) < limit and used < utilization * capacity:
        size = pick(rng, sizes)
        if used + size > capacity:
            size = 1
            if used + size > capacity:
                break
        used += size
        holders.append(Holder(((resource, str(size)),), [(resource, size)], unit, selector))
    return holders


def _hami_holders(built: BuiltNode, rng: random.Random, limit: int, utilization: float) -> list[Holder]:
    model = MODELS[built.truth.model]
    slots = dict.fromkeys(built.uuids, hami.HAMI_SPLIT_COUNT)
    memory = dict.fromkeys(built.uuids, model.memory_mib)
    cores = dict.fromkeys(built.uuids, 100)
    holders: list[Holder] = []
    target = utilization * len(built.uuids) * 100
    while len(holders) < limit and sum(100 - c for c in cores.values()) < target:
        want_mem = pick(rng, (2048, 4096, 6144, 8192, 10240, 16384))
        want_cores = pick(rng, (10, 20, 25, 30, 50))
        count = 2 if rng.random() < 0.1 else 1
        # Binpack, as HAMi's default node policy does: the fullest device that still fits.
        fits = [u for u in built.uuids if slots[u] > 0 and memory[u] >= want_mem and cores[u] >= want_cores]
        if len(fits) < count:
            break
        fits.sort(key=lambda u: (cores[u], built.uuids.index(u)))
        chosen = fits[:count]
        shares = []
        for uuid in chosen:
            slots[uuid] -= 1
            memory[uuid] -= want_mem
            cores[uuid] -= want_cores
            shares.append(hami.AllocatedShare(uuid, want_mem, want_cores))
        resources = ((GPU, str(count)), (hami.GPUCORES, str(want_cores)), (hami.GPUMEM, str(want_mem)))
        rows = [(GPU, count), (hami.GPUMEM, want_mem), (hami.GPUCORES, want_cores)]
        holders.append(Holder(resources, rows, f"hami:{model.product}", shares=shares))
    return holders


def impossible_request(
    ctx: WorkloadContext, built: BuiltNode
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]] | None:
    """A request no node of the cluster can satisfy, with the pod's node selector; None for HAMi.

    One more than the largest allocatable anywhere, so that the pod is unschedulable whatever runs
    (a HAMi node advertises 80 `nvidia.com/gpu` slots, more than twice an 8-GPU node's).
    """
    truth = built.truth
    model = MODELS[truth.model]
    if truth.mechanism == "hami":
        return None
    if truth.mechanism == "mig-mixed":
        # Asking the full-GPU profile of a pool cut into smaller ones: combinational fragmentation.
        resource = f"{MIG_RESOURCE_PREFIX}{model.mig_profiles[-1].name}"
        return ((resource, str(ctx.max_allocatable(resource) + 1)),), ()
    resource = next((r for r, n in truth.resources.items() if n > 0), GPU)
    selector = (("nvidia.com/gpu.product", model.product),) if truth.mechanism == "exclusive" else ()
    return ((resource, str(ctx.max_allocatable(resource) + 1)),), selector


def unschedulable_text(ctx: WorkloadContext, spec: dict[str, Any], key: tuple[Any, ...]) -> str:
    cached = ctx.message_cache.get(key)
    if cached is not None:
        return cached
    requests = pod_requests(spec)
    reasons: Counter[tuple[str, ...]] = Counter()
    for node in ctx.all_nodes:
        static = static_reason(spec, node)
        if static:
            reasons[(static,)] += 1
            continue
        # The wanted amount exceeds every node's allocatable, so free capacity does not matter here.
        name = node["metadata"]["name"]
        if name not in ctx.allocatable:
            ctx.allocatable[name] = node_allocatable(node)
        fit = resource_reasons(requests, ctx.allocatable[name], 110)
        if fit:
            reasons[tuple(fit)] += 1
    text = unschedulable_message(reasons, len(ctx.all_nodes))
    ctx.message_cache[key] = text
    return text


def generate_node_pods(ctx: WorkloadContext, built: BuiltNode, budget: int) -> None:
    """`budget` tenant pods for one device-plugin node, recorded in the truth."""
    rng, factory, truth = ctx.rng, ctx.factory, ctx.truth
    node = built.obj
    name = node["metadata"]["name"]
    idle = rng.random() < 0.1
    utilization = 0.0 if idle else rng.uniform(0.4, 1.0)
    limit = max(0, int(budget * 0.8))
    holders = [] if idle else holders_for(built, rng, limit, utilization)
    tolerations = factory.gpu_tolerations
    hami_node = built.truth.mechanism == "hami"
    scheduler = hami.HAMI_SCHEDULER if hami_node else None
    cpu, memory = ("1", "8Gi") if built.truth.mechanism in ("hami", "time-slicing", "mps") else ("2", "16Gi")
    for index, holder in enumerate(holders):
        kind = ctx.pick(HOLDER_KINDS)
        namespace = ctx.namespace()
        pod_name = ctx.pod_name(kind)
        roll = rng.random()
        state = "Starting" if roll < 0.04 else "Running"
        deleting = 300 if 0.04 <= roll < 0.09 else None
        age = rng.randint(900, 86400 * 2)
        annotations: dict[str, str] | None = None
        if holder.shares:
            annotations = hami.pod_annotations(name, holder.shares, 1767600000 - age, bound=True)
        elif state == "Running" and rng.random() < 0.3:
            annotations = factory.run_seconds(ctx.pick(RUN_SECONDS_CHOICES))
        pod = factory.pod(
            name=pod_name,
            namespace=namespace,
            uid=ctx.pod_uid(),
            kind=kind,
            state=state,
            containers=factory.containers(kind, holder.resources, cpu, memory),
            age=age,
            node=name,
            node_ip=node_ip(node),
            pod_ip=pod_ip(node, index),
            node_selector=factory.selector(holder.selector) if holder.selector else None,
            tolerations=tolerations,
            scheduler=scheduler,
            annotations=annotations,
            deleting_since=deleting,
        )
        ctx.objects.append(pod)
        truth.pods_by_phase[pod["status"]["phase"]] += 1
        if deleting is not None:
            truth.deleting_pods += 1
        for resource, count in holder.rows:
            truth.allocations.append(
                Allocation("Pod", namespace, pod_name, name, holder.unit, resource, count)
            )

    impossible = impossible_request(ctx, built)
    probe = holders_for(built, random.Random(0), 1, 1.0)
    for index in range(len(holders), budget):
        kind = ctx.pick(OTHER_KINDS)
        roll = rng.random()
        state = "Succeeded" if roll < 0.55 else "Failed" if roll < 0.65 else "Pending"
        if state == "Pending" and impossible is not None and roll >= 0.8:
            state = "Unschedulable"
        age = rng.randint(600, 86400 * 3)
        namespace = ctx.namespace()
        if state == "Unschedulable" and impossible is not None:
            resources, selector = impossible
        elif probe:
            resources, selector = probe[0].resources, probe[0].selector
        else:
            resources, selector = ((GPU, "1"),), ()
        containers = factory.containers(kind, resources, cpu, memory)
        node_selector = factory.selector(selector) if selector else None
        message = ""
        if state == "Unschedulable":
            spec = {"containers": containers, "nodeSelector": node_selector or {}, "tolerations": tolerations}
            message = unschedulable_text(ctx, spec, (resources, selector))
        bound = state in ("Succeeded", "Failed")
        pod = factory.pod(
            name=ctx.pod_name(kind),
            namespace=namespace,
            uid=ctx.pod_uid(),
            kind=kind,
            state=state,
            containers=containers,
            age=age,
            node=name if bound else None,
            node_ip=node_ip(node) if bound else None,
            pod_ip=pod_ip(node, index) if bound else None,
            node_selector=node_selector,
            tolerations=tolerations,
            scheduler=scheduler,
            message=message,
        )
        ctx.objects.append(pod)
        truth.pods_by_phase[pod["status"]["phase"]] += 1
