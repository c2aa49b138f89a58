"""Nodes become Node rows, their GPUs and their device-plugin shareable units."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils import timezone

from inventory.domain.cards import CardBasis
from inventory.domain.gpu_equivalent import STORED_GE_PLACES, ge_to_decimal
from inventory.domain.hami_node import HAMI_DEVICE_CORDON_KEY, parse_hami_device_cordon
from inventory.domain.issues import ParseIssue, error
from inventory.domain.node_inventory import NodeGpuInventory, parse_node_object
from inventory.domain.node_topology import parse_node_topology
from inventory.domain.raw_fields import as_list, as_map, dig
from inventory.models import Gpu, Node, ShareableUnit
from inventory.sync.bulk import insert_rows
from inventory.sync.context import SyncContext, content_hash, legacy_match
from inventory.sync.dra_cards import DRA_SOURCE, recount_dra_cards
from inventory.sync.mig_management import mark_driver_managed_mig

KIND = "nodes"
NO_POOL = "(no pool label)"


def base_product(label: str | None) -> str:
    """The card's product label without the sharing (-SHARED) and MIG single (-MIG-...) suffixes."""
    product = (label or "").removesuffix("-SHARED")
    return product.split("-MIG-")[0]


def _hash_parts(obj: dict[str, Any]) -> tuple[Any, ...]:
    metadata, status = as_map(obj.get("metadata")), as_map(obj.get("status"))
    conditions = {c.get("type"): c.get("status") for c in map(as_map, as_list(status.get("conditions")))}
    return (
        metadata.get("labels"),
        metadata.get("annotations"),
        dig(obj, "spec", "unschedulable"),
        dig(obj, "spec", "taints"),
        status.get("capacity"),
        status.get("allocatable"),
        conditions,
        # Naming another topology label re-reads every node once.
        list(settings.INVENTORY_TOPOLOGY_LABELS),
    )


@dataclass(slots=True)
class _Changed:
    """A node whose content changed, parsed, with its row ready to be written."""

    row: Node
    new: bool
    inventory: NodeGpuInventory
    device_plugin: bool
    # The labels count no cards: DRA's count (inventory/sync/dra_cards.py) stands for them.
    cards_from_dra: bool = False
    cordoned: frozenset[str] = frozenset()  # GPU UUIDs HAMi's hami.io/device-cordon names


NODE_FIELDS = [
    "uid",
    "labels",
    "taints",
    "capacity",
    "allocatable",
    "conditions",
    "ready",
    "cordoned",
    "product",
    "model_key",
    "mig_strategy",
    "sharing_strategy",
    "replicas",
    "gpu_count",
    "card_basis",
    "card_source",
    "parse_issues",
    "nvlink_clique",
    "topology",
    "pool_id",
    "present",
    "gone_at",
    "content_hash",
    "updated_at",
]
UNIT_FIELDS = [
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
    "unavailable",
]
GPU_FIELDS = ["uuid", "product", "model_key", "memory_mib", "mig_enabled"]
# bulk_update writes one CASE per field: a few hundred rows keep each statement well under
# PostgreSQL's parameter limit whatever the page or watch batch size.
UPDATE_BATCH = 500


def apply_nodes(ctx: SyncContext, objects: Iterable[dict[str, Any]]) -> int:
    """Upsert nodes whose content changed and rebuild their GPUs and units; returns changes.

    The whole page (or watch batch) is written together: one query per table and operation, not
    nine per node, which was most of a 5,000-node cold sync."""
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
            "pk", "name", "content_hash", "present", "gpu_count", "card_basis", "card_source"
        )
    }
    changed, rehashed = [], []
    for name, obj in incoming.items():
        parts = _hash_parts(obj)
        digest = content_hash(*parts)
        node = existing.get(name)
        if node is not None and node.present and node.content_hash == digest:
            continue
        if node is not None and node.present and legacy_match(node.content_hash, *parts):
            node.content_hash = digest
            rehashed.append(node)
            continue
        changed.append(_prepare_node(ctx, obj, name, digest, node))
    Node.objects.bulk_update(rehashed, ["content_hash"], batch_size=UPDATE_BATCH)
    if changed:
        insert_rows(Node, [c.row for c in changed if c.new])
        Node.objects.bulk_update([c.row for c in changed if not c.new], NODE_FIELDS, batch_size=UPDATE_BATCH)
        _store_gpus_and_units(ctx, changed)
        recount_dra_cards(ctx, node_ids=[c.row.pk for c in changed if c.cards_from_dra])
        # A node listed after its slices: they were stored without it.
        mark_driver_managed_mig(ctx, node_names=[c.row.name for c in changed if c.new])
    return len(changed)


def _missing(code: str) -> ParseIssue:
    return error(code, "required field missing")


def _prepare_node(
    ctx: SyncContext, obj: dict[str, Any], name: str, digest: str, node: Node | None
) -> _Changed:
    inventory = parse_node_object(node=obj)
    registered = frozenset(d.uuid for d in inventory.hami.devices) if inventory.hami else None
    cordoned, cordon_issues = parse_hami_device_cordon(
        annotations=as_map(dig(obj, "metadata", "annotations")), registered=registered
    )
    labels = as_map(dig(obj, "metadata", "labels"))
    topology = parse_node_topology(labels=labels, topology_labels=settings.INVENTORY_TOPOLOGY_LABELS)
    issues = [*inventory.issues, *cordon_issues, *topology.issues]
    ctx.note(KIND, issues, obj=name)
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
        "card_basis": str(inventory.card_basis) if inventory.has_gpus or inventory.physical_gpu_count else "",
        "card_source": inventory.card_source[:200],
        "parse_issues": [
            {"severity": str(i.severity), "code": i.code, "message": i.message, "source": i.source}
            for i in issues
        ],
        "nvlink_clique": topology.clique,
        "topology": dict(topology.labels),
        "pool_id": ctx.pool_id(str(pool_name or NO_POOL)),
        "present": True,
        "gone_at": None,
        "content_hash": digest,
        "updated_at": timezone.now(),
    }
    labels_count = bool(inventory.physical_gpu_count) and fields["card_basis"] != str(CardBasis.UNKNOWN)
    if not labels_count and node is not None and node.card_source == DRA_SOURCE:
        for kept in ("gpu_count", "card_basis", "card_source"):
            fields[kept] = getattr(node, kept)
    new = node is None
    if node is None:
        node = Node(cluster=ctx.cluster, name=name, **fields)
    else:
        for field_name, value in fields.items():
            setattr(node, field_name, value)
    # A DRA node advertises no nvidia.com/* extended resources: its devices come from ResourceSlices,
    # and the units its labels describe must not be counted twice. (HAMi nodes turn the NVIDIA device
    # plugin off too, yet advertise nvidia.com/gpu, so the label alone cannot tell.)
    advertised = bool(inventory.allocatable or inventory.capacity)
    return _Changed(
        row=node,
        new=new,
        inventory=inventory,
        device_plugin=advertised,
        cards_from_dra=not labels_count,
        cordoned=cordoned,
    )


def _store_gpus_and_units(ctx: SyncContext, changed: list[_Changed]) -> None:
    """Rebuild the GPUs and device-plugin units of changed nodes, one query per table and operation.

    Existing GPUs are keyed (node, index) and existing units by their key (which names the node), the
    same keys the per-node rebuild used, so a row that stays keeps its id (allocations point at it).
    A node just created has nothing stored yet: its rows are only inserted."""
    stored = [c.row.pk for c in changed if not c.new]
    gpus: dict[uuid.UUID, dict[int, Gpu]] = {}
    current: dict[uuid.UUID | None, dict[str, ShareableUnit]] = {}
    if stored:
        for gpu in Gpu.objects.filter(node_id__in=stored):
            gpus.setdefault(gpu.node_id, {})[gpu.index] = gpu
        # DRA devices belong to their ResourceSlice, not to the node's labels: a node event must not
        # delete them (the slice sync owns their lifecycle).
        for unit in ShareableUnit.objects.filter(node_id__in=stored, resource_slice__isnull=True):
            current.setdefault(unit.node_id, {})[unit.key] = unit
    gpu_creates: list[Gpu] = []
    gpu_updates: list[Gpu] = []
    gpu_deletes: list[uuid.UUID] = []
    unit_creates: list[ShareableUnit] = []
    unit_updates: list[ShareableUnit] = []
    unit_deletes: list[uuid.UUID] = []
    for change in changed:
        node_id, name, inv = change.row.pk, change.row.name, change.inventory
        hami_uuids = {i: d.uuid for i, d in enumerate(inv.hami.devices)} if inv.hami else {}
        count = inv.physical_gpu_count or 0
        gpu_ids = {}
        have = gpus.get(node_id, {})
        if change.cards_from_dra:
            have, count = {}, 0  # the slice sync owns these cards' rows
        for index in range(count):
            found = have.get(index)
            if found is None:
                gpu = Gpu(node_id=node_id, index=index)
                gpu_creates.append(gpu)
            else:
                gpu = found
                gpu_updates.append(gpu)
            gpu.uuid = hami_uuids.get(index, gpu.uuid)
            gpu.product = base_product(inv.product_label)
            gpu.model_key = inv.model.key
            gpu.memory_mib = inv.model.memory_mib or inv.gpu_memory_mib
            gpu.mig_enabled = str(inv.mig_strategy) in ("single", "mixed") and bool(
                inv.mig_devices or "-MIG-" in (inv.product_label or "")
            )
            gpu_ids[index] = gpu.pk
        gpu_deletes.extend(g.pk for i, g in have.items() if i >= count)
        units = _wanted_units(
            ctx,
            node_id,
            name,
            inv,
            gpu_ids,
            hami_uuids,
            device_plugin=change.device_plugin,
            cordoned=change.cordoned,
        )
        mine = current.get(node_id, {})
        unit_deletes.extend(u.pk for k, u in mine.items() if k not in units)
        for key, unit in units.items():
            if key in mine:
                unit.pk = mine[key].pk
                unit_updates.append(unit)
            else:
                unit_creates.append(unit)
    # The same order as the per-node rebuild: GPUs (delete, insert, update), then units (delete,
    # update, insert), so a unit never points at a GPU row that is about to go.
    if gpu_deletes:
        Gpu.objects.filter(pk__in=gpu_deletes).delete()
    insert_rows(Gpu, gpu_creates)
    Gpu.objects.bulk_update(gpu_updates, GPU_FIELDS, batch_size=UPDATE_BATCH)
    if unit_deletes:
        ShareableUnit.objects.filter(pk__in=unit_deletes).delete()
    ShareableUnit.objects.bulk_update(unit_updates, UNIT_FIELDS, batch_size=UPDATE_BATCH)
    insert_rows(ShareableUnit, unit_creates)


def _wanted_units(
    ctx: SyncContext,
    node_id: uuid.UUID,
    name: str,
    inv: NodeGpuInventory,
    gpu_ids: dict[int, uuid.UUID],
    hami_uuids: dict[int, str],
    *,
    device_plugin: bool,
    cordoned: frozenset[str] = frozenset(),
) -> dict[str, ShareableUnit]:
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
            ge_each=ge_to_decimal(group.ge_each, places=STORED_GE_PLACES),
            model_key=group.model_key,
            memory_mib=group.memory_mib,
            mig_profile=group.mig_profile or "",
            placement_start=group.placement.start if group.placement else None,
            placement_size=group.placement.size if group.placement else None,
            split_count=group.split_count,
            device_uuid=group.gpu_uuid
            or (hami_uuids.get(group.gpu_index, "") if group.gpu_index is not None else ""),
        )
        if units[key].device_uuid in cordoned:
            units[key].unavailable = HAMI_CORDONED
    return units


HAMI_CORDONED = f"cordoned by HAMi ({HAMI_DEVICE_CORDON_KEY})"


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
