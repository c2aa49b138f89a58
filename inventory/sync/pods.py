"""Pods holding GPU resources through the device plugin or HAMi become allocation intervals."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.utils import timezone

from gpuplatform.quantity import QuantityError, parse_quantity
from inventory.domain.gpu_equivalent import STORED_GE_PLACES, ge_to_decimal
from inventory.domain.hami_pod import parse_hami_pod_annotations
from inventory.domain.issues import warning
from inventory.domain.raw_fields import as_list, as_map, dig
from inventory.models import HolderKind
from inventory.sync.context import SyncContext, UnitRef, k8s_time
from inventory.sync.ledger import Holder, WantedRow, close_holders, open_holder_uids, reconcile_holders

KIND = "pods"
FINISHED = ("Succeeded", "Failed")
# HAMi asks for memory and cores next to nvidia.com/gpu; the share is one row per card it got.
HAMI_SIDE_RESOURCES = ("nvidia.com/gpumem", "nvidia.com/gpumem-percentage", "nvidia.com/gpucores")


def _gpu_resources(ctx: SyncContext, pod: dict[str, Any], name: str) -> dict[str, int]:
    """Extended nvidia.com/* resources summed over containers (limits, else requests)."""
    totals: dict[str, int] = {}
    for container in map(as_map, as_list(dig(pod, "spec", "containers"))):
        resources = as_map(container.get("resources"))
        asked = {**as_map(resources.get("requests")), **as_map(resources.get("limits"))}
        for resource, raw in asked.items():
            if not str(resource).startswith("nvidia.com/"):
                continue
            try:
                value = int(parse_quantity(raw))
            except (QuantityError, ValueError, ArithmeticError):
                ctx.note(KIND, [warning("pod.bad_quantity", f"{resource}={raw!r}")], obj=name)
                continue
            totals[resource] = totals.get(resource, 0) + value
    return {k: v for k, v in totals.items() if v > 0}


def _times(pod: dict[str, Any]) -> tuple[datetime, datetime]:
    now = timezone.now()
    status = as_map(pod.get("status"))
    scheduled = next(
        (
            c.get("lastTransitionTime")
            for c in map(as_map, as_list(status.get("conditions")))
            if c.get("type") == "PodScheduled" and c.get("status") == "True"
        ),
        None,
    )
    started = (
        k8s_time(status.get("startTime"))
        or k8s_time(scheduled)
        or k8s_time(dig(pod, "metadata", "creationTimestamp"))
        or now
    )
    finished = [
        k8s_time(dig(s, "state", "terminated", "finishedAt"))
        for s in map(as_map, as_list(status.get("containerStatuses")))
    ]
    ends = [f for f in finished if f is not None]
    ended = max(ends) if ends and status.get("phase") in FINISHED else now
    return started, ended


def _holder(
    ctx: SyncContext, pod: dict[str, Any], units: dict[str, list[UnitRef]], may_be_open: set[str] | None
) -> Holder | None:
    metadata = as_map(pod.get("metadata"))
    uid, name, namespace = metadata.get("uid"), metadata.get("name"), metadata.get("namespace")
    if not (isinstance(uid, str) and uid and isinstance(name, str) and isinstance(namespace, str)):
        ctx.note(KIND, [warning("pod.missing_identity", "pod without uid, name or namespace")], obj=str(name))
        return None
    node_name = dig(pod, "spec", "nodeName")
    holding = isinstance(node_name, str) and node_name and dig(pod, "status", "phase") not in FINISHED
    rows: list[WantedRow] = []
    if holding:
        rows = _rows(ctx, pod, f"{namespace}/{name}", str(node_name), units)
    if not rows and may_be_open is not None and uid not in may_be_open:
        # Holds nothing and has no open interval: nothing to open or close. Most pods of a list
        # (daemons, CPU work), whose times were read for nothing.
        return None
    started, ended = _times(pod)
    return Holder(
        kind=HolderKind.POD,
        uid=uid,
        name=name,
        namespace=namespace,
        tenant_id=ctx.tenant_for(namespace),
        started_at=started,
        ended_at=ended,
        rows=tuple(rows),
    )


def _rows(
    ctx: SyncContext, pod: dict[str, Any], label: str, node: str, units: dict[str, list[UnitRef]]
) -> list[WantedRow]:
    resources = _gpu_resources(ctx, pod, label)
    rows = []
    hami = parse_hami_pod_annotations(annotations=as_map(dig(pod, "metadata", "annotations")))
    ctx.note(KIND, hami.issues, obj=label)
    hami_node = any(u.kind == "hami_gpu" for u in units.get(node, []))
    if hami_node and hami.devices:
        for device in hami.devices:
            ref = next(iter(units.get(f"{node}|uuid|{device.uuid}", [])), None)
            memory = ref.memory_mib if ref and ref.memory_mib else 0
            ge = (
                ge_to_decimal(device.share_ge(card_memory_mib=memory), places=STORED_GE_PLACES)
                if memory
                else Decimal(0)
            )
            rows.append(
                _row(
                    ref,
                    f"hami/{device.uuid}",
                    "nvidia.com/gpu",
                    1,
                    ge,
                    node,
                    details={
                        "memory_mib": device.memory_mib,
                        "cores": device.cores,
                    },
                )
            )
        resources = {k: v for k, v in resources.items() if k != "nvidia.com/gpu"}
    for resource, count in sorted(resources.items()):
        if resource in HAMI_SIDE_RESOURCES:
            continue
        ref = next(iter(units.get(f"{node}|{resource}", [])), None)
        if ref is None:
            ctx.note(KIND, [warning("pod.unknown_unit", f"{resource} not advertised by {node}")], obj=label)
        ge = ref.ge_each * count if ref else Decimal(0)
        rows.append(_row(ref, resource, resource, count, ge, node))
    return rows


def _row(
    ref: UnitRef | None,
    key: str,
    resource: str,
    count: int,
    ge: Decimal,
    node: str,
    details: dict[str, Any] | None = None,
) -> WantedRow:
    return WantedRow(
        unit_key=key,
        resource_name=resource,
        count=count,
        ge=ge,
        model_key=ref.model_key if ref else "",
        node_name=node,
        node_id=ref.node_id if ref else None,
        pool_id=ref.pool_id if ref else None,
        gpu_id=ref.gpu_id if ref and ref.kind == "hami_gpu" else None,
        unit_id=ref.unit_id if ref and ref.kind == "hami_gpu" else None,
        details=details or {},
    )


def apply_pods(
    ctx: SyncContext, objects: Iterable[dict[str, Any]], *, reason: str, listing: bool = False
) -> tuple[int, set[str]]:
    """Open and close the intervals of these pods; returns (changes, uids of the pods that hold or held
    something: on a list, one that holds nothing and has nothing open is passed over)."""
    pods = list(objects)
    nodes = {str(dig(p, "spec", "nodeName")) for p in pods if dig(p, "spec", "nodeName")}
    units = ctx.node_units(nodes) if nodes else {}
    may_be_open = (
        ctx.stored_keys("open pods", lambda: open_holder_uids(cluster=ctx.cluster, kind=HolderKind.POD))
        if listing
        else None
    )
    holders = []
    for pod in pods:
        try:
            holder = _holder(ctx, pod, units, may_be_open)
        except (TypeError, ValueError, AttributeError, KeyError) as exc:
            ctx.note(KIND, [warning("pod.unreadable", str(exc)[:200])], obj=str(dig(pod, "metadata", "name")))
            continue
        if holder is not None:
            holders.append(holder)
    changes = reconcile_holders(cluster=ctx.cluster, holders=holders, reason=reason, may_be_open=may_be_open)
    return changes, {h.uid for h in holders}


def delete_pods(ctx: SyncContext, objects: Iterable[dict[str, Any]]) -> int:
    ended = {}
    for pod in objects:
        uid = dig(pod, "metadata", "uid")
        if isinstance(uid, str) and uid:
            ended[uid] = timezone.now()
    return close_holders(cluster=ctx.cluster, kind=HolderKind.POD, ended=ended, reason="deleted")
