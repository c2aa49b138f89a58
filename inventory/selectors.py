"""Reads over the inventory that are more than a filter: fragmentation input and flavors' unit counts.
Pool capacity (physical, advertised, allocated, free) is inventory/capacity.py."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from functools import partial
from itertools import pairwise
from typing import Any

from django.db.models import Count, F, Sum

from gpuplatform.db.stamped_cache import UNREAD, StampedCache
from inventory.capacity import pool_model_capacity
from inventory.domain.device_taints import taints_from_json
from inventory.domain.gpu_equivalent import ge_to_decimal
from inventory.domain.gpu_models import GpuModel, resolve_gpu_model
from inventory.fragmentation import WHOLE_GPU, GpuGeometry, PlacedInstance, analyze_pool_fragmentation
from inventory.fragmentation.geometry import occupancy_of, placeable_starts
from inventory.models import Allocation, Gpu, Node, NodePool, ResourceSlice, ShareableUnit


def _lay_out_counted(models: list[GpuModel], counted: list[tuple[str, int]]) -> list[list[PlacedInstance]]:
    """Where a node's label-counted MIG instances sit. Labels give counts per node, not placements:
    this is first-fit decreasing over the node's cards (largest profiles first, each on the first card
    with room), the layout mig-parted makes for the same profiles; a count that fits nowhere is left out."""
    placed: list[list[PlacedInstance]] = [[] for _ in models]
    wanted = []
    for name, count in counted:
        for model in models:
            profile = model.mig_profile(name)
            if profile is not None:
                wanted.extend([profile] * count)
                break
    for profile in sorted(wanted, key=lambda p: (-p.memory_slices, p.name)):
        for model, instances in zip(models, placed, strict=True):
            if model.mig_profile(profile.name) is None:
                continue
            occupancy, _ = occupancy_of(model=model, instances=instances)
            starts = placeable_starts(model=model, occupancy=occupancy, profile=profile)
            if starts:
                instances.append(PlacedInstance(profile=profile.name, start=starts[0], in_use=False))
                break
    return placed


def _card_of_parent(cards: list[Gpu], placed: list[PlacedDevice]) -> dict[str, int]:
    """A DRA device's parent card: by UUID where the inventory knows the card's UUID, else the parents
    in PCI bus order onto the cards in index order (the driver numbers GPUs by bus id)."""
    by_uuid = {card.uuid: i for i, card in enumerate(cards) if card.uuid}
    buses: dict[str, str] = {}
    for device in placed:
        buses[device.parent_uuid] = min(buses.get(device.parent_uuid, device.bus_id), device.bus_id)
    unmatched = sorted((p for p in buses if p not in by_uuid), key=lambda p: (buses[p], p))
    free = [i for i in range(len(cards)) if i not in by_uuid.values()]
    return {**by_uuid, **dict(zip(unmatched, free, strict=False))}


def pool_geometries(*, pool: NodePool) -> dict[str, list[GpuGeometry]]:
    """Each node's GPUs as geometries for the fragmentation module, busy instances marked."""
    return pools_geometries(pool_ids=[pool.pk]).get(pool.pk, {})


def pools_geometries(*, pool_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, dict[str, list[GpuGeometry]]]:
    """Geometries of many pools in four queries, whatever their number (a page of the fragmentation
    list read them pool by pool, six queries each).

    MIG instances come from two sources: DRA devices carry their card (``parentUUID``) and placement,
    and are placed where the driver says; label-counted instances (GFD, mixed or single strategy) give
    counts only and are laid out first-fit. An instance is busy when an open allocation holds that very
    device (DRA) or, for counted ones, holds the node's resource carrying that profile: under the single
    strategy that resource is ``nvidia.com/gpu`` itself, so a MIG node's ``nvidia.com/gpu`` holders are
    busy instances, not busy whole cards.
    """
    ids = list(pool_ids)
    cards: dict[tuple[uuid.UUID, str], list[Gpu]] = defaultdict(list)
    for gpu in (
        Gpu.objects.filter(node__pool_id__in=ids, node__present=True)
        .select_related("node")
        .order_by("node__name", "index")
    ):
        assert gpu.node.pool_id is not None
        cards[(gpu.node.pool_id, gpu.node.name)].append(gpu)
    counted: dict[tuple[uuid.UUID, str], list[tuple[str, int]]] = defaultdict(list)
    profile_of_resource: dict[tuple[uuid.UUID, str, str], str] = {}
    placed_devices: dict[tuple[uuid.UUID, str], list[PlacedDevice]] = defaultdict(list)
    for unit_id, pool_id, node, kind, resource, profile, count, start, size, attributes in (
        ShareableUnit.objects.filter(node__pool_id__in=ids, node__present=True, counted=True)
        .exclude(mig_profile="")
        .values_list(
            "id",
            "node__pool_id",
            "node__name",
            "kind",
            "resource_name",
            "mig_profile",
            "count",
            "placement_start",
            "placement_size",
            "attributes",
        )
    ):
        parent = str((attributes or {}).get("parentUUID") or "")
        if kind == "dra_device" and start is not None and parent:
            bus_id = str((attributes or {}).get("pcieBusID") or "")
            placed_devices[(pool_id, node)].append(
                PlacedDevice(unit_id, parent, bus_id, profile, start, size or 1)
            )
        else:
            counted[(pool_id, node)].append((profile, count))
            profile_of_resource[(pool_id, node, resource)] = profile
    placed_ids = {device.unit_id for devices in placed_devices.values() for device in devices}
    # Keyed by pool and node: one page may hold pools of two clusters whose nodes share names.
    busy: dict[tuple[uuid.UUID, str, str], int] = defaultdict(int)
    busy_units: set[uuid.UUID] = set()
    whole_busy: dict[tuple[uuid.UUID, str], int] = defaultdict(int)
    for pool_id, node, resource, count, unit_id in Allocation.objects.filter(
        pool_id__in=ids, ended_at__isnull=True
    ).values_list("pool_id", "node_name", "resource_name", "count", "unit_id"):
        if unit_id in placed_ids:
            busy_units.add(unit_id)
            continue
        held = profile_of_resource.get((pool_id, node, resource))
        if held is None and resource.startswith("nvidia.com/mig-"):
            held = resource.removeprefix("nvidia.com/mig-")
        if held is not None:
            busy[(pool_id, node, held)] += count
        else:
            whole_busy[(pool_id, node)] += count
    _take_unavailable(ids, placed_ids, profile_of_resource, busy, busy_units, whole_busy)
    result: dict[uuid.UUID, dict[str, list[GpuGeometry]]] = {pool: {} for pool in ids}
    for (pool_id, node), node_cards in cards.items():
        result[pool_id][node] = _node_geometries(
            pool_id=pool_id,
            node=node,
            cards=node_cards,
            counted=counted.get((pool_id, node), []),
            placed=placed_devices.get((pool_id, node), []),
            busy=busy,
            busy_units=busy_units,
            whole_busy=whole_busy,
        )
    return result


def _take_unavailable(
    ids: list[uuid.UUID],
    placed_ids: set[uuid.UUID],
    profile_of_resource: dict[tuple[uuid.UUID, str, str], str],
    busy: dict[tuple[uuid.UUID, str, str], int],
    busy_units: set[uuid.UUID],
    whole_busy: dict[tuple[uuid.UUID, str], int],
) -> None:
    """Tainted and cordoned units place nothing new: the geometry sees them as taken, so neither the
    usable nor the stranded figure counts them (the report says why beside)."""
    for unit_id, pool_id, node, resource, count in (
        ShareableUnit.objects.filter(node__pool_id__in=ids, node__present=True, counted=True)
        .exclude(unavailable="")
        .values_list("id", "node__pool_id", "node__name", "resource_name", "count")
    ):
        if unit_id in placed_ids:
            busy_units.add(unit_id)
        elif (profile := profile_of_resource.get((pool_id, node, resource))) is not None:
            busy[(pool_id, node, profile)] += count
        else:
            whole_busy[(pool_id, node)] += count


@dataclass(frozen=True)
class PlacedDevice:
    """A DRA MIG device as its slice publishes it: on card ``parent_uuid`` at memory slice ``start``."""

    unit_id: uuid.UUID
    parent_uuid: str
    bus_id: str
    profile: str
    start: int
    size: int


def _device_instances(devices: list[PlacedDevice], busy_units: set[uuid.UUID]) -> list[PlacedInstance]:
    """The instances a card's DRA devices say exist. Static MIG devices (mig-parted ran before the
    driver) do not overlap and all exist. Partitionable devices (KEP-4815) publish every placement a
    card could take, overlapping: only those allocated exist, and the rest of the card is free to carve."""
    spans = sorted((d.start, d.start + d.size) for d in devices)
    overlapping = any(end > next_start for (_, end), (next_start, _) in pairwise(spans))
    kept = [d for d in devices if d.unit_id in busy_units] if overlapping else devices
    return [
        PlacedInstance(d.profile, d.start, d.unit_id in busy_units)
        for d in sorted(kept, key=lambda d: d.start)
    ]


def _node_geometries(
    *,
    pool_id: uuid.UUID,
    node: str,
    cards: list[Gpu],
    counted: list[tuple[str, int]],
    placed: list[PlacedDevice],
    busy: dict[tuple[uuid.UUID, str, str], int],
    busy_units: set[uuid.UUID],
    whole_busy: dict[tuple[uuid.UUID, str], int],
) -> list[GpuGeometry]:
    models = [resolve_gpu_model(product=card.product, memory_mib=card.memory_mib) for card in cards]
    laid_out = _lay_out_counted(models, counted)
    on_card: list[list[PlacedDevice]] = [[] for _ in cards]
    card_of_parent = _card_of_parent(cards, placed)
    for device in placed:
        index = card_of_parent.get(device.parent_uuid)
        if index is not None:
            on_card[index].append(device)
    device_instances = [_device_instances(devices, busy_units) for devices in on_card]
    geometries = []
    for card, model, free_instances, devices in zip(cards, models, laid_out, device_instances, strict=True):
        instances = list(devices)
        if not instances:
            for instance in free_instances:
                key = (pool_id, node, instance.profile)
                in_use = busy[key] > 0
                busy[key] -= int(in_use)
                instances.append(PlacedInstance(instance.profile, instance.start, in_use))
        mig = bool(instances)
        in_use = not mig and whole_busy[(pool_id, node)] > 0
        whole_busy[(pool_id, node)] -= int(in_use)
        geometries.append(
            GpuGeometry(
                gpu_id=str(card.pk), model=model, mig_enabled=mig, instances=tuple(instances), in_use=in_use
            )
        )
    return geometries


def pools_fragmentation(
    *, pools: list[NodePool], demand: list[str] | None = None
) -> dict[uuid.UUID, dict[str, Any]]:
    """`pool_fragmentation` of a page of pools with a constant number of queries."""
    ids = [pool.pk for pool in pools]
    geometries = pools_geometries(pool_ids=ids)
    capacity = pool_model_capacity(pool_ids=ids)
    return {
        pool.pk: _fragmentation_report(
            pool=pool,
            geometries=geometries.get(pool.pk, {}),
            capacity=capacity.get(pool.pk, []),
            demand=demand,
        )
        for pool in pools
    }


def pool_fragmentation(*, pool: NodePool, demand: list[str] | None = None) -> dict[str, Any]:
    """Stranded capacity of a pool for the demanded profiles (default: whole GPUs and every profile
    the pool offers), as JSON-ready numbers."""
    return pools_fragmentation(pools=[pool], demand=demand)[pool.pk]


def _fragmentation_report(
    *, pool: NodePool, geometries: dict[str, list[GpuGeometry]], capacity: list[Any], demand: list[str] | None
) -> dict[str, Any]:
    offered = {i.profile for gpus in geometries.values() for g in gpus for i in g.instances}
    wanted = demand or [WHOLE_GPU, *sorted(offered)]
    report = analyze_pool_fragmentation(pool_name=pool.name, nodes=geometries, demand=wanted)
    # Free GE is the pool's one truth (inventory/capacity.py); the geometry only says how much of it
    # the demanded profiles can use, so usable + stranded = free whatever the layouts sum to.
    by_capacity = {row.model_key: row for row in capacity}
    by_model = {}
    for model in sorted(set(by_capacity) | set(report.by_model)):
        row = by_capacity.get(model)
        free = row.free_ge if row else Decimal(0)
        totals = report.by_model.get(model)
        usable = min(ge_to_decimal(totals.usable_ge), free) if totals else Decimal(0)
        by_model[model] = {
            "cards": row.cards if row else 0,
            "free_ge": str(free),
            "usable_ge": str(usable),
            "stranded_ge": str(free - usable),
            "unavailable_ge": str(row.unavailable_ge if row else Decimal(0)),
            "unavailable": list(row.unavailable) if row else [],
        }
    return {
        "demand": wanted,
        "node_count": report.node_count,
        "gpu_count": report.gpu_count,
        "stranded_gpu_count": report.stranded_gpu_count,
        "by_model": by_model,
    }


def cached_pool_resource_capacity(
    *, pool_ids: Iterable[uuid.UUID], stamp: int | None = UNREAD
) -> dict[uuid.UUID, dict[str, int]]:
    """`pool_resource_capacity`, cached in this process until a unit or a node's pool or presence
    changes (migration 0002's stamp): summing a 5,000-node pool's 40,000 units took 18 ms, and
    admission reads it on every decision, just before it takes the flavor's lock. ``stamp``: the
    stamp as the caller read it (`CAPACITY_STAMP_SQL`, sent with its own statements), in this
    transaction; by default it is read here."""
    ids = tuple(sorted(set(pool_ids), key=str))
    read = partial(pool_resource_capacity, pool_ids=ids)
    return _capacity.get_at(stamp, ids, read)


_capacity: StampedCache[dict[uuid.UUID, dict[str, int]]] = StampedCache("inventory_capacity_stamp")
CAPACITY_STAMP_SQL = _capacity.stamp_sql  # its rows give the stamp through `capacity_stamp_of`
capacity_stamp_of = StampedCache.stamp_of


def pool_resource_capacity(*, pool_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, dict[str, int]]:
    """Units per pool and resource name, in native units, for flavors: never more than a node
    advertises, nor more than its cards hold (a node advertising whole GPUs and MIG instances over the
    same cards offers at most ``cards / GE of a unit`` of each).

    Extended resources and DRA devices count units; HAMi shares also offer ``nvidia.com/gpumem``
    (MiB of card memory) and ``nvidia.com/gpucores`` (100 per card).
    """
    ids = list(pool_ids)
    result: dict[uuid.UUID, dict[str, int]] = {pool: defaultdict(int) for pool in ids}
    cards = dict(
        Gpu.objects.filter(node__pool_id__in=ids, node__present=True)
        .values("node_id")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("node_id", "n")
    )
    # Summed in SQL per node (the cap is per node's cards): a large pool has tens of thousands of units.
    # A tainted or cordoned unit (``unavailable``) is not offered: admission must not place on it.
    rows = (
        ShareableUnit.objects.filter(node__pool_id__in=ids, node__present=True, counted=True, unavailable="")
        .values("node__pool_id", "node_id", "kind", "resource_name", "ge_each")
        .annotate(units=Sum("count"), memory=Sum(F("memory_mib") * F("count")))
        .order_by()
        .values_list("node__pool_id", "node_id", "kind", "resource_name", "ge_each", "units", "memory")
    )
    for pool, node, kind, resource, ge_each, units, memory in rows:
        per_resource = result[pool]
        node_cards = cards.get(node, 0)
        if node_cards and ge_each and ge_each > 0 and kind != "hami_gpu":
            # GE is stored rounded (1/7 as 0.142857): a hair of slack so 7 x 1/7 still fits a card.
            # HAMi slots are soft shares whose GE depends on what a pod asks: not capped here.
            units = min(units, int(Decimal(node_cards) / ge_each + CARD_SLACK))
        per_resource[resource] += units
        if kind == "hami_gpu":
            per_resource["nvidia.com/gpumem"] += memory or 0
            per_resource["nvidia.com/gpucores"] += 100 * units
    return {pool: dict(per_resource) for pool, per_resource in result.items()}


CARD_SLACK = Decimal("0.0001")


def node_device_taints(*, node: Node) -> dict[str, Any]:
    """A node page's device taints and cordons: each tainted or cordoned unit with its taints, whether
    it is free capacity, and the taints whose effect the API does not know (flagged, read as None)."""
    rows = []
    unknown: list[dict[str, str]] = []
    for unit in ShareableUnit.objects.filter(node=node).exclude(taints=[], unavailable="").order_by("key"):
        taints = taints_from_json(unit.taints or [])
        rows.append(
            {
                "device": unit.device_name or unit.device_uuid or unit.key,
                "taints": taints,
                "unavailable": unit.unavailable,
                "health": any(t.health and t.blocks for t in taints),
            }
        )
        unknown.extend(
            {
                "code": "dra.taint.unknown_effect",
                "message": f"{t.label}: effect {t.effect!r} is not None, NoSchedule or NoExecute; "
                "read as None",
                "source": f"{unit.device_name} {t.source or 'ResourceSlice'}".strip(),
            }
            for t in taints
            if not t.known
        )
    return {"device_taints": rows, "taint_issues": unknown}


def node_slice_issues(*, node: Node) -> list[dict[str, str]]:
    """Issues the sync found in the node's ResourceSlices taken with the rest of their pool (counters
    a device consumes that the pool does not declare), beside the node's own parse issues."""
    return nodes_slice_issues(nodes=[node]).get(node.pk, [])


def nodes_slice_issues(*, nodes: Iterable[Node]) -> dict[uuid.UUID, list[dict[str, str]]]:
    """``node_slice_issues`` for a page of nodes in one query (none when the page is empty): node id
    -> its slices' issues, each ``{severity, code, message, source}`` with the slice named in source."""
    by_name = {(n.cluster_id, n.name): n.pk for n in nodes}
    found: dict[uuid.UUID, list[dict[str, str]]] = {pk: [] for pk in by_name.values()}
    if not by_name:
        return found
    rows = (
        ResourceSlice.objects.filter(
            cluster_id__in={cluster for cluster, _ in by_name},
            node_name__in={name for _, name in by_name},
            counters__has_key="issues",
        )
        .order_by("name")
        .values_list("cluster_id", "node_name", "name", "counters")
    )
    for cluster_id, node_name, name, counters in rows:
        node_id = by_name.get((cluster_id, node_name))
        if node_id is not None:
            found[node_id].extend(
                {**issue, "source": f"{name}: {issue.get('source', '')}"} for issue in counters["issues"]
            )
    return found
