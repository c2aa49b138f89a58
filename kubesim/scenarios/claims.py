"""DRA workloads: ResourceClaims (user-created and generated from templates) and the pods using them.

Allocated claims name devices of the node's pool that match their request (class + selector) and
never share a device; on partitionable pools the chosen devices of one GPU are a valid MIG placement,
so the counters they consume stay within the GPU's counter set.
"""

from __future__ import annotations

from typing import Any

from kubesim.scenarios.dra import (
    DELETE_PROTECTION,
    DRIVER,
    GPU_CLASS,
    MIG_CLASS,
    POD_CLAIM_NAME,
    SHARE_MODES,
    DraDevice,
    DraPool,
    allocation_status,
    claim_request,
    claim_state,
    node_selector_for,
    share_results,
)
from kubesim.scenarios.ids import name_suffix
from kubesim.scenarios.mig_geometry import place_profiles
from kubesim.scenarios.nodes import BuiltNode
from kubesim.scenarios.truth import Allocation
from kubesim.scenarios.workloads import HOLDER_KINDS, OTHER_KINDS, WorkloadContext, node_ip, pod_ip

MEMORY_SELECTOR = "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"


def profile_selector(profile: str) -> str:
    return f"device.attributes['gpu.nvidia.com'].profile == '{profile}'"


ClaimShape = tuple[str, int, str | None]  # (device class, count, selector)


def template_name(shape: ClaimShape) -> str:
    device_class, count, selector = shape
    if device_class == MIG_CLASS and selector:
        profile = selector.rsplit("'", 2)[1]
        return "mig-" + profile.replace(".", "-").replace("+", "-")
    return {1: "single-gpu", 2: "double-gpu"}.get(count, f"gpu-x{count}") + ("-40gi" if selector else "")


def resource_claim_template(namespace: str, shape: ClaimShape) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": template_name(shape), "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": [claim_request(*shape)]}}},
    }


def _pick(
    pool: DraPool, free: list[DraDevice], ctx: WorkloadContext
) -> tuple[ClaimShape, list[DraDevice]] | None:
    """Next claim for a node: its request shape and the free devices it gets."""
    rng = ctx.rng
    if not free:
        return None
    if pool.mode == "gpu" or pool.mode in SHARE_MODES:
        count = 2 if rng.random() < 0.2 and len(free) >= 2 else 1
        selector = MEMORY_SELECTOR if rng.random() < 0.3 else None
        return (GPU_CLASS, count, selector), free[:count]
    device = ctx.pick(free)
    if device.profile is None:
        return (GPU_CLASS, 1, None), [device]
    return (MIG_CLASS, 1, profile_selector(device.profile.name)), [device]


def _partitionable_choice(pool: DraPool, ctx: WorkloadContext) -> list[list[DraDevice]]:
    """Per GPU: the full device, a balanced MIG split, or nothing. Each inner list is one claim's devices."""
    by_name = {d.name: d for d in pool.devices}
    claims: list[list[DraDevice]] = []
    gpus = sorted({d.gpu_index for d in pool.devices})
    model = pool.model
    balanced = [model.mig_profiles[0].name] * 2 + [model.mig_profiles[3].name, model.mig_profiles[4].name]
    for index in gpus:
        roll = ctx.rng.random()
        if roll < 0.3:
            claims.append([by_name[f"gpu-{index}"]])
        elif roll < 0.8:
            placed = place_profiles(model, balanced) or []
            for inst in placed:
                name = f"gpu-{index}-mig-{inst.profile.slug}-{inst.profile.gi_id}-{inst.start}"
                claims.append([by_name[name]])
    return claims


def _claim_spec(ctx: WorkloadContext, shape: ClaimShape) -> dict[str, Any]:
    key = ("claim-spec", *shape)
    spec = ctx.shared.get(key)
    if spec is None:
        spec = ctx.shared[key] = {"devices": {"requests": [claim_request(*shape)]}}
    return spec


def _node_selector(ctx: WorkloadContext, node: str) -> dict[str, Any]:
    key = ("node-selector", node)
    selector = ctx.shared.get(key)
    if selector is None:
        selector = ctx.shared[key] = node_selector_for(node)
    return selector


def claim_object(
    ctx: WorkloadContext,
    *,
    name: str,
    namespace: str,
    shape: ClaimShape,
    age: int,
    allocation: dict[str, Any] | None = None,
    reserved_for: tuple[str, str] | None = None,
    owner: tuple[str, str] | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "creationTimestamp": ctx.ts.ago(age)}
    if owner is not None:
        pod_name, pod_uid = owner
        metadata["generateName"] = f"{pod_name}-gpu-"
        metadata["annotations"] = {POD_CLAIM_NAME: "gpu"}
        metadata["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "blockOwnerDeletion": True,
                "controller": True,
                "kind": "Pod",
                "name": pod_name,
                "uid": pod_uid,
            }
        ]
    status: dict[str, Any] = {}
    if allocation is not None:
        metadata["finalizers"] = [DELETE_PROTECTION]
        status["allocation"] = allocation
    if reserved_for is not None:
        status["reservedFor"] = [{"resource": "pods", "name": reserved_for[0], "uid": reserved_for[1]}]
    if deleting:
        metadata["deletionTimestamp"] = ctx.ts.ago(120)
        metadata["deletionGracePeriodSeconds"] = 0
    claim: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": metadata,
        "spec": _claim_spec(ctx, shape),
    }
    if status:
        claim["status"] = status
    ctx.truth.claims_by_state[claim_state(claim)] += 1
    return claim


def generate_dra_node(
    ctx: WorkloadContext,
    built: BuiltNode,
    pool: DraPool,
    pod_budget: int,
    claim_budget: int,
    shapes: set[ClaimShape],
) -> int:
    """Claims and pods of one DRA node; returns how many claims it created."""
    rng, factory, truth = ctx.rng, ctx.factory, ctx.truth
    node = built.obj
    node_name = node["metadata"]["name"]
    idle = rng.random() < 0.1
    limit = min(int(pod_budget * 0.8), claim_budget)
    planned: list[tuple[ClaimShape, list[DraDevice]]] = []
    if not idle and pool.mode == "partitionable":
        for devices in _partitionable_choice(pool, ctx)[:limit]:
            device = devices[0]
            if device.profile is None:
                planned.append(((GPU_CLASS, 1, None), devices))
            else:
                planned.append(((MIG_CLASS, 1, profile_selector(device.profile.name)), devices))
    elif not idle:
        free = list(pool.devices)
        target = rng.uniform(0.4, 1.0) * len(free)
        while len(planned) < limit and len(pool.devices) - len(free) < target:
            pick = _pick(pool, free, ctx)
            if pick is None:
                break
            planned.append(pick)
            for device in pick[1]:
                free.remove(device)
    claims = 0
    cpu, memory = "2", "16Gi"
    pods = 0
    for index, (shape, devices) in enumerate(planned):
        namespace = ctx.namespace()
        kind = ctx.pick(HOLDER_KINDS)
        pod_name = ctx.pod_name(kind)
        pod_uid = ctx.pod_uid()
        roll = rng.random()
        age = rng.randint(900, 86400 * 2)
        allocation = allocation_status(
            node_name, [d.name for d in devices], selector=_node_selector(ctx, node_name)
        )
        with_pod = roll < 0.95
        templated = with_pod and rng.random() < 0.5
        if templated:
            claim_name = f"{pod_name}-gpu-{ctx.pick('bcdfghjklmnpqrstvwxz')}{ctx.pod_counter % 10000:04d}"
        else:
            claim_name = f"{kind}-claim-{ctx.pod_counter:06d}"
        share_results(pool, allocation, f"{namespace}/{claim_name}")
        claim = claim_object(
            ctx,
            name=claim_name,
            namespace=namespace,
            shape=shape,
            age=age,
            allocation=allocation,
            reserved_for=(pod_name, pod_uid) if with_pod else None,
            owner=(pod_name, pod_uid) if templated else None,
            deleting=0.85 <= roll < 0.90,
        )
        ctx.objects.append(claim)
        claims += 1
        for device in devices:
            truth.allocations.append(
                Allocation(
                    "ResourceClaim",
                    namespace,
                    claim_name,
                    node_name,
                    f"dra:{DRIVER}/{node_name}/{device.name}",
                    shape[0],
                    1,
                )
            )
        if not with_pod:
            continue
        refs: list[dict[str, str]] | None
        if templated:
            shapes.add(shape)
            refs = [{"name": "gpu", "resourceClaimTemplateName": template_name(shape)}]
            statuses = [{"name": "gpu", "resourceClaimName": claim_name}]
        else:
            refs = [{"name": "gpu", "resourceClaimName": claim_name}]
            statuses = None
        state = "Starting" if roll < 0.04 else "Running"
        annotations = factory.run_seconds(ctx.pick((1800, 3600, 7200))) if rng.random() < 0.3 else None
        pod = factory.pod(
            name=pod_name,
            namespace=namespace,
            uid=pod_uid,
            kind=kind,
            state=state,
            containers=factory.containers(kind, (), cpu, memory, claims=True),
            age=age,
            node=node_name,
            node_ip=node_ip(node),
            pod_ip=pod_ip(node, index),
            tolerations=factory.gpu_tolerations,
            annotations=annotations,
            resource_claims=refs,
            claim_statuses=statuses,
        )
        ctx.objects.append(pod)
        truth.pods_by_phase[pod["status"]["phase"]] += 1
        pods += 1

    # The rest of the node's pods: finished ones (their claims are gone) and pending ones waiting
    # for a claim the scheduler could not allocate yet.
    for index in range(pods, pod_budget):
        kind = ctx.pick(OTHER_KINDS)
        namespace = ctx.namespace()
        pod_name = ctx.pod_name(kind)
        roll = rng.random()
        state = "Succeeded" if roll < 0.6 else "Failed" if roll < 0.7 else "Pending"
        if state == "Pending" and claims >= claim_budget:
            state = "Succeeded"
        age = rng.randint(600, 86400 * 3)
        refs = None
        if state == "Pending":
            claim_name = f"{kind}-claim-{ctx.pod_counter:06d}"
            shape = _pending_shape(pool, ctx)
            ctx.objects.append(claim_object(ctx, name=claim_name, namespace=namespace, shape=shape, age=age))
            claims += 1
            refs = [{"name": "gpu", "resourceClaimName": claim_name}]
        bound = state != "Pending"
        pod = factory.pod(
            name=pod_name,
            namespace=namespace,
            uid=ctx.pod_uid(),
            kind=kind,
            state=state,
            containers=factory.containers(kind, (), cpu, memory, claims=refs is not None),
            age=age,
            node=node_name if bound else None,
            node_ip=node_ip(node) if bound else None,
            pod_ip=pod_ip(node, index) if bound else None,
            tolerations=factory.gpu_tolerations,
            resource_claims=refs,
        )
        ctx.objects.append(pod)
        truth.pods_by_phase[pod["status"]["phase"]] += 1
    return claims


def _pending_shape(pool: DraPool, ctx: WorkloadContext) -> ClaimShape:
    if pool.mode == "gpu" or pool.mode in SHARE_MODES:
        return (GPU_CLASS, ctx.pick((1, 1, 2, 4)), None)
    profiles = sorted({d.profile.name for d in pool.devices if d.profile is not None})
    return (MIG_CLASS, 1, profile_selector(ctx.pick(profiles))) if profiles else (GPU_CLASS, 1, None)


def standalone_pending_claims(ctx: WorkloadContext, count: int, shapes: list[ClaimShape]) -> None:
    """Claims nobody uses yet: created ahead of their workloads (or by the control plane's materialiser)."""
    for i in range(count):
        namespace = ctx.namespace()
        shape = shapes[i % len(shapes)]
        name = f"reserved-capacity-{i:06d}-{name_suffix(ctx.rng)}"
        ctx.objects.append(
            claim_object(ctx, name=name, namespace=namespace, shape=shape, age=ctx.rng.randint(60, 86400))
        )
