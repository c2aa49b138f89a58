"""`build()`: a whole GPU cluster as plain API objects plus the truth the generator recorded."""

from __future__ import annotations

import gc
import math
import random
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubesim.scenarios import cluster_objects, device_health, dra
from kubesim.scenarios.claims import (
    ClaimShape,
    generate_dra_node,
    resource_claim_template,
    standalone_pending_claims,
)
from kubesim.scenarios.gpu_models import MODELS
from kubesim.scenarios.hami import HAMI_SPLIT_COUNT, REGISTER, parse_register
from kubesim.scenarios.ids import DEFAULT_NOW, Timestamps, name_suffix, stable_uuid
from kubesim.scenarios.nodes import BuiltNode, build_node
from kubesim.scenarios.pod_objects import PodFactory
from kubesim.scenarios.pools import SCENARIO_POOLS, PoolSpec, split_nodes
from kubesim.scenarios.truth import DraPoolTruth, HamiDevice, Truth
from kubesim.scenarios.workloads import WorkloadContext, generate_node_pods

NAMES: tuple[str, ...] = tuple(SCENARIO_POOLS)
DEFAULT_PODS_PER_NODE = 25  # tenant pods; five daemon pods per node come on top (30 per node in all)
DEFAULT_CLAIMS_PER_NODE = 20  # for scenarios with DRA pools; 0 otherwise
DEFAULT_GPUS_PER_NODE = 8
ZONES = ("eu-west-1a", "eu-west-1b", "eu-west-1c")
TENANT_WEIGHTS = {"team-vision": 0.3, "team-nlp": 0.3, "team-recsys": 0.2, "team-infra": 0.15}
SANDBOX_WEIGHT = 0.05


@dataclass
class Scenario:
    """Objects as the API server would return them (uid kept, resourceVersion left to the store).

    Objects share nested values (container specs, condition lists) to stay small at 150,000 pods:
    treat them as read-only, or deep-copy before changing one.
    """

    name: str
    seed: int
    objects: list[dict[str, Any]]
    truth: Truth


def build(
    name: str,
    *,
    nodes: int,
    seed: int,
    namespaces: list[str] | None = None,
    pods_per_node: int | None = None,
    claims_per_node: int | None = None,
    gpus_per_node: int = DEFAULT_GPUS_PER_NODE,
    now: datetime | None = None,
) -> Scenario:
    """Generate scenario `name` (one of NAMES) with `nodes` GPU nodes, deterministically from `seed`."""
    # The build allocates millions of dicts and frees none: the cyclic collector would rescan them all
    # again and again (a third of the build time at 5,000 nodes) without finding anything to free.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _build(name, nodes, seed, namespaces, pods_per_node, claims_per_node, gpus_per_node, now)
    finally:
        if was_enabled:
            gc.enable()


def _build(
    name: str,
    nodes: int,
    seed: int,
    namespaces: list[str] | None,
    pods_per_node: int | None,
    claims_per_node: int | None,
    gpus_per_node: int,
    now: datetime | None,
) -> Scenario:
    if name not in SCENARIO_POOLS:
        raise ValueError(f"unknown scenario {name!r}; choose one of {', '.join(NAMES)}")
    pools = SCENARIO_POOLS[name]
    rng = random.Random(f"{name}:{seed}")
    ts = Timestamps(now or DEFAULT_NOW)
    tenants = list(namespaces) if namespaces is not None else list(cluster_objects.DEFAULT_TENANT_NAMESPACES)
    truth = Truth(scenario=name, namespaces=tenants)
    has_dra = any(p.mechanism == "dra" for p in pools)
    has_hami = any(p.mechanism == "hami" for p in pools)
    per_node_pods = DEFAULT_PODS_PER_NODE if pods_per_node is None else pods_per_node
    if claims_per_node is None:
        claims_per_node = DEFAULT_CLAIMS_PER_NODE if has_dra else 0
    total_claims = claims_per_node * nodes if pools else 0

    head: list[dict[str, Any]] = [cluster_objects.namespace(n) for n in cluster_objects.SYSTEM_NAMESPACES]
    head += [cluster_objects.namespace(n) for n in tenants]
    head += cluster_objects.operator_config_maps(has_hami)
    if has_dra:
        head += dra.device_classes()

    built_nodes: list[tuple[BuiltNode, int]] = []
    slices: list[dict[str, Any]] = []
    dra_pools: dict[str, dra.DraPool] = {}
    counter = 0
    for pool, count in split_nodes(pools, nodes):
        model = MODELS[pool.model]
        for i in range(count):
            counter += 1
            node_name = f"gpu-{pool.name}-{i:04d}"
            age = rng.randint(3 * 86400, 90 * 86400)
            roll = rng.random()
            built = build_node(
                name=node_name,
                pool=pool,
                model=model,
                gpus=gpus_per_node,
                zone=ZONES[counter % len(ZONES)],
                ts=ts,
                age_seconds=age,
                cordoned=roll < 0.02,
                ready=not (0.02 <= roll < 0.03),
                clique=_clique(pool, i),
            )
            built_nodes.append((built, age))
            _record_node(truth, built)
            if pool.mechanism == "dra":
                dra_pool = dra.build_pool(
                    node=node_name,
                    node_uid=built.obj["metadata"]["uid"],
                    model=model,
                    mode=pool.dra_mode,
                    uuids=built.uuids,
                    layout=built.layout,
                    generation=1,
                    ts=ts,
                    age_seconds=age - 120,
                    slice_suffixes=[name_suffix(rng) for _ in range(4)],
                )
                dra_pools[node_name] = dra_pool
                slices.extend(dra_pool.slices)
                _record_pool(truth, dra_pool)

    objects = head + [b.obj for b, _ in built_nodes] + slices
    ctx = WorkloadContext(
        rng=rng,
        ts=ts,
        factory=PodFactory(ts),
        truth=truth,
        objects=[],
        namespaces=tenants,
        namespace_weights=[
            TENANT_WEIGHTS.get(n, SANDBOX_WEIGHT if n.startswith("sandbox") else 0.2) for n in tenants
        ],
        all_nodes=[b.obj for b, _ in built_nodes],
    )
    shapes: set[ClaimShape] = set()
    claims = 0
    per_dra_node = math.ceil(total_claims / len(dra_pools)) if dra_pools else 0
    for built, age in built_nodes:
        node_name = built.obj["metadata"]["name"]
        if tenants and node_name in dra_pools:
            budget = max(0, min(per_dra_node, total_claims - claims))
            claims += generate_dra_node(ctx, built, dra_pools[node_name], per_node_pods, budget, shapes)
        elif tenants:
            generate_node_pods(ctx, built, per_node_pods)
        ctx.objects.extend(cluster_objects.daemon_pods(ctx, built, age - 300))
    if tenants and total_claims > claims:
        pending_shapes = sorted(shapes, key=str) or [(dra.GPU_CLASS, 1, None)]
        standalone_pending_claims(ctx, total_claims - claims, pending_shapes)
    templates = [resource_claim_template(ns, shape) for ns in tenants for shape in sorted(shapes, key=str)]
    objects += templates + ctx.objects
    if name == "device-health":
        device_health.apply(objects, truth, ts)
    return Scenario(name=name, seed=seed, objects=objects, truth=truth)


def _record_node(truth: Truth, built: BuiltNode) -> None:
    node = built.truth
    truth.nodes[node.name] = node
    truth.gpus_by_model[node.product] += node.gpus
    if node.mechanism in ("mig-mixed", "mig-single"):
        for profile, count in node.mig_profiles.items():
            truth.mig_instances[(node.product, profile)] += count
    if node.sharing_strategy != "none":
        truth.shared_replicas[(node.sharing_strategy, node.product)] += sum(node.resources.values())
    if node.mechanism == "hami":
        for device in parse_register(built.obj["metadata"]["annotations"][REGISTER]):
            truth.hami_devices.append(
                HamiDevice(node.name, device.uuid, HAMI_SPLIT_COUNT, device.memory_mib, device.cores)
            )


def _record_pool(truth: Truth, pool: dra.DraPool) -> None:
    entry = DraPoolTruth(
        driver=dra.DRIVER,
        pool=pool.node,
        node=pool.node,
        generation=pool.generation,
        slice_count=len(pool.slices),
        counter_sets=pool.counter_sets,
    )
    for device in pool.devices:
        entry.devices[device.label] += 1
        truth.dra_devices[(dra.DRIVER, device.label)] += 1
    truth.dra_pools[(dra.DRIVER, pool.node)] = entry


def _clique(pool: PoolSpec, index: int) -> str:
    """The pool's nodes in cliques of ``nodes_per_clique``, all in one NVLink domain; "" without."""
    if pool.nodes_per_clique <= 0:
        return ""
    return f"{stable_uuid('nvlink-domain', pool.name)}.{index // pool.nodes_per_clique}"
