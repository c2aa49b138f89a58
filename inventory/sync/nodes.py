"""Nodes become Node rows, their GPUs and their device-plugin shareable units."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from django.utils import timezone

from inventory.domain.gpu_equivalent import ge_to_decimal
from inventory.domain.issues import ParseIssue, error
from inventory.domain.node_inventory import NodeGpuInventory, parse_node_object
from inventory.domain.raw_fields import as_list, as_map, dig
from inventory.models import Gpu, Node, ShareableUnit
from inventory.sync.context import SyncContext, content_hash

KIND = "nodes"
NO_POOL = "(no pool label)"


def base_product(label: str | None) -> str:
    """The card's product label without the sharing (-SHARED) and MIG single (-MIG-...) suffixes."""
    product = (label or "").removesuffix("-SHARED")
    return product.split("-MIG-")[0]


def _hash(obj: dict[str, Any]) -> str:
    metadata, status = as_map(obj.get("metadata")), as_map(obj.get("status"))
    conditions = {c.get("type"): c.get("status") for c in map(as_map, as_list(status.get("conditions")))}
    return content_hash(
        metadata.get("labels"),
        metadata.get("annotations"),
        dig(obj, "spec", "unschedulable"),
        dig(obj, "spec", "taints"),
        status.get("capacity"),
        status.get("allocatable"),
        conditions,
    )


def apply_nodes(ctx: SyncContext, objects: Iterable[dict[str, Any]]) -> int:
    """Upsert nodes whose content changed and rebuild their GPUs and units; returns changes."""
    incoming = {}
    for obj in objects:
        name = dig(obj, "metadata", "name")
        if not isinstance(name, str) or not name:
            ctx.note(KIND, [_missing("node.missing_name")], obj="<unnamed node>")
            continue
        incoming[name] = obj
    existing = {
        n.name: n
        for n in Node.objects.filter(cluster=ctx.cluster, name__in=list(incoming)).only(
            "pk", "name", "content_hash", "present"
        )
    }
    changes = 0
    for name, obj in incoming.items():
        digest = _hash(obj)
        node = existing.get(name)
        if node is not None and node.content_hash == digest and node.present:
            continue
        _store_node(ctx, obj, name, digest, node)
        changes += 1
    return changes


def _missing(code: str) -> ParseIssue:
    return error(code, "required field missing")


def _store_node(ctx: SyncContext, obj: dict[str, Any], name: str, digest: str, node: Node | None) -> None:
    inventory = parse_node_object(node=obj)
    ctx.note(KIND, inventory.issues, obj=name)
    labels = as_map(dig(obj, "metadata", "labels"))
    status = as_map(obj.get("status"))
    conditions = {
        str(c.get("type")): str(c.get("status")) for c in map(as_map, as_list(status.get("conditions")))
    }
    pool_value = labels.get(ctx.cluster.pool_label)
    pool_name = base_product(pool_value) if ctx.cluster.pool_label.endswith("gpu.product") else pool_value
    fields = {
        "uid": str(dig(obj, "metadata", "uid") or ""),
        "labels": dict(labels),
        "taints": as_list(dig(obj, "spec", "taints")),
        "capacity": dict(as_map(status.get("capacity"))),
        "allocatable": dict(as_map(status.get("allocatable"))),
        "conditions": conditions,
        "ready": conditions.get("Ready") == "True",
        "cordoned": bool(dig(obj, "spec", "unschedulable")),
        "product": base_product(inventory.product_label),
        "model_key": inventory.model.key if inventory.has_gpus or inventory.product_label else "",
        "mig_strategy": str(inventory.mig_strategy),
        "sharing_strategy": str(inventory.sharing_strategy),
        "replicas": inventory.replicas,
        "gpu_count": inventory.physical_gpu_count or 0,
        "pool_id": ctx.pool_id(str(pool_name or NO_POOL)),
        "present": True,
        "gone_at": None,
        "content_hash": digest,
        "updated_at": timezone.now(),
    }
    if node is None:
        node = Node.objects.create(cluster=ctx.cluster, name=name, **fields)
    else:
        Node.objects.filter(pk=node.pk).update(**fields)
    # A DRA node advertises no nvidia.com/* extended resources: its devices come from ResourceSlices,
    # and the units its labels describe must not be counted twice. (HAMi nodes turn the NVIDIA device
    # plugin off too, yet advertise nvidia.com/gpu, so the label alone cannot tell.)
    advertised = bool(inventory.allocatable or inventory.capacity)
    _store_gpus_and_units(ctx, node.pk, name, inventory, device_plugin=advertised)


def _store_gpus_and_units(
    ctx: SyncContext, node_id: uuid.UUID, name: str, inv: NodeGpuInventory, *, device_plugin: bool
) -> None:
    hami_uuids = {i: d.uuid for i, d in enumerate(inv.hami.devices)} if inv.hami else {}
    count = inv.physical_gpu_count or 0
    gpus = {g.index: g for g in Gpu.objects.filter(node_id=node_id)}
    wanted = []
    for index in range(count):
        gpu = gpus.get(index) or Gpu(node_id=node_id, index=index)
        gpu.uuid = hami_uuids.get(index, gpu.uuid)
        gpu.product = base_product(inv.product_label)
        gpu.model_key = inv.model.key
        gpu.memory_mib = inv.model.memory_mib or inv.gpu_memory_mib
        gpu.mig_enabled = str(inv.mig_strategy) in ("single", "mixed") and bool(
            inv.mig_devices or "-MIG-" in (inv.product_label or "")
        )
        wanted.append(gpu)
    Gpu.objects.filter(node_id=node_id, index__gte=count).delete()
    Gpu.objects.bulk_create([g for g in wanted if g.index not in gpus])
    Gpu.objects.bulk_update(
        [g for g in wanted if g.index in gpus], ["uuid", "product", "model_key", "memory_mib", "mig_enabled"]
    )
    gpu_ids = {g.index: g.pk for g in wanted}
    units: dict[str, ShareableUnit] = {}
    # On a DRA node the device plugin is off: its devices come from ResourceSlices instead.
    for position, group in enumerate(inv.units if device_plugin else ()):
        where = "-" if group.gpu_index is None else str(group.gpu_index)
        key = f"node/{name}/{group.resource_name}/{where}/{group.mig_profile or '-'}/{position}"
        units[key] = ShareableUnit(
            cluster=ctx.cluster,
            node_id=node_id,
            gpu_id=gpu_ids.get(group.gpu_index) if group.gpu_index is not None else None,
            key=key,
            kind=str(group.kind),
            resource_name=group.resource_name,
            count=group.count,
            ge_each=ge_to_decimal(group.ge_each),
            model_key=group.model_key,
            memory_mib=group.memory_mib,
            mig_profile=group.mig_profile or "",
            placement_start=group.placement.start if group.placement else None,
            placement_size=group.placement.size if group.placement else None,
            split_count=group.split_count,
            device_uuid=group.gpu_uuid
            or (hami_uuids.get(group.gpu_index, "") if group.gpu_index is not None else ""),
        )
    current = {u.key: u for u in ShareableUnit.objects.filter(node_id=node_id)}
    ShareableUnit.objects.filter(pk__in=[u.pk for k, u in current.items() if k not in units]).delete()
    fields = [
        "gpu_id",
        "kind",
        "resource_name",
        "count",
        "ge_each",
        "model_key",
        "memory_mib",
        "mig_profile",
        "placement_start",
        "placement_size",
        "split_count",
        "device_uuid",
    ]
    updates = []
    for key, unit in units.items():
        if key in current:
            unit.pk = current[key].pk
            updates.append(unit)
    ShareableUnit.objects.bulk_update(updates, fields)
    ShareableUnit.objects.bulk_create([u for k, u in units.items() if k not in current])


def vanish_nodes(ctx: SyncContext, names: set[str]) -> int:
    """Nodes gone from the cluster: kept (present=False) with their units and GPUs removed."""
    nodes = list(
        Node.objects.filter(cluster=ctx.cluster, name__in=names, present=True).values_list("pk", flat=True)
    )
    if not nodes:
        return 0
    ShareableUnit.objects.filter(node_id__in=nodes).delete()
    Gpu.objects.filter(node_id__in=nodes).delete()
    Node.objects.filter(pk__in=nodes).update(present=False, gone_at=timezone.now(), content_hash="")
    return len(nodes)


def present_node_names(ctx: SyncContext) -> set[str]:
    return set(Node.objects.filter(cluster=ctx.cluster, present=True).values_list("name", flat=True))
