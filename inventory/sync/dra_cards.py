"""Cards of nodes that only DRA describes (a DRA driver without GFD labels): counted from their
ResourceSlices' devices (a whole GPU is its `uuid`, a MIG device belongs to its `parentUUID`), marked
reported with source "ResourceSlice devices". Labels win where they count cards; this fills the nodes
they leave without one, and gives the count back when the devices go."""

from __future__ import annotations

import re
import uuid
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.db.models import Q

from inventory.domain.cards import CardBasis, count_dra_cards
from inventory.domain.device_taints import taints_from_json
from inventory.models import Gpu, Node, ShareableUnit
from inventory.sync.context import SyncContext

DRA_SOURCE = "ResourceSlice devices"


def without_label_cards() -> Q:
    """Nodes whose cards the labels did not count, or that DRA counted before."""
    return Q(card_basis__in=["", str(CardBasis.UNKNOWN)]) | Q(card_source=DRA_SOURCE)


def recount_dra_cards(
    ctx: SyncContext, *, node_names: Iterable[str] | None = None, node_ids: Iterable[uuid.UUID] | None = None
) -> int:
    """Recount the cards of the named nodes (all of the cluster's when neither is given); returns how
    many nodes changed."""
    nodes = Node.objects.filter(cluster=ctx.cluster, present=True).filter(without_label_cards())
    if node_names is not None:
        nodes = nodes.filter(name__in=list(node_names))
    if node_ids is not None:
        nodes = nodes.filter(pk__in=list(node_ids))
    rows = list(nodes.only("pk", "gpu_count", "card_basis", "card_source"))
    if not rows:
        return 0
    devices: dict[uuid.UUID, list[tuple[dict[str, Any], str]]] = defaultdict(list)
    for node_id, attributes, model_key in ShareableUnit.objects.filter(
        node_id__in=[n.pk for n in rows], kind="dra_device", counted=True
    ).values_list("node_id", "attributes", "model_key"):
        devices[node_id].append((attributes or {}, model_key))
    changed = 0
    for node in rows:
        cards = _cards(devices.get(node.pk, []))
        count = count_dra_cards(devices=[a for a, _ in devices.get(node.pk, [])])
        if count.cards:
            wanted = (count.cards, str(CardBasis.REPORTED), DRA_SOURCE)
        elif node.card_source == DRA_SOURCE:
            wanted = (0, "", "")
        else:
            _store_cards(node, [])  # labels that counted cards are gone, and DRA counts none
            continue
        if (node.gpu_count, node.card_basis, node.card_source) != wanted:
            node.gpu_count, node.card_basis, node.card_source = wanted
            node.save(update_fields=["gpu_count", "card_basis", "card_source"])
            changed += 1
        _store_cards(node, cards[: wanted[0]])
    return changed


def _cards(devices: list[tuple[dict[str, Any], str]]) -> list[tuple[str, str, str]]:
    """(uuid, product, model key) per card, in PCI bus order (the driver's GPU numbering)."""
    found: dict[str, tuple[str, str, str]] = {}
    for attributes, model_key in devices:
        mig = str(attributes.get("type") or "") == "mig" or bool(attributes.get("parentUUID"))
        key = str(attributes.get("parentUUID") if mig else attributes.get("uuid") or "")
        if not key:
            continue
        bus = str(attributes.get("pcieBusID") or "")
        product = str(attributes.get("productName") or "")
        old = found.get(key)
        if old is None or bus < old[0]:
            found[key] = (bus, product, model_key)
    return [
        (key, product, model)
        for key, (_, product, model) in sorted(found.items(), key=lambda kv: (kv[1][0], kv[0]))
    ]


def _store_cards(node: Node, cards: list[tuple[str, str, str]]) -> None:
    have = {gpu.index: gpu for gpu in Gpu.objects.filter(node=node)}
    for index, (card_uuid, product, model_key) in enumerate(cards):
        gpu = have.pop(index, None) or Gpu(node=node, index=index)
        if not gpu._state.adding and (gpu.uuid, gpu.product, gpu.model_key) == (
            card_uuid,
            product,
            model_key,
        ):
            continue
        gpu.uuid, gpu.product, gpu.model_key = card_uuid, product, model_key
        gpu.save()
    if have:
        Gpu.objects.filter(pk__in=[g.pk for g in have.values()]).delete()


def mark_card_health(ctx: SyncContext, *, node_names: Iterable[str]) -> int:
    """A card is unhealthy while one of its DRA devices carries a health taint that keeps claims off
    it (the NVIDIA driver's gpu.nvidia.com/xid or gpu-lost with NoSchedule/NoExecute); healthy again
    when the driver lifts it. The GPU health SLI reads Gpu.healthy. Returns the cards changed."""
    names = list(node_names)
    if not names:
        return 0
    sick: set[str] = set()
    # Cards the labels counted have no UUID: the driver's device names say their index ("gpu-3",
    # "gpu-3-mig-1g10gb-19-0").
    sick_index: set[tuple[str, int]] = set()
    for node_name, device_name, device_uuid, attributes, taints in (
        ShareableUnit.objects.filter(
            cluster=ctx.cluster, node__name__in=names, kind="dra_device", counted=True
        )
        .exclude(taints=[])
        .values_list("node__name", "device_name", "device_uuid", "attributes", "taints")
    ):
        if any(t.health and t.blocks for t in taints_from_json(taints or [])):
            parent = (attributes or {}).get("parentUUID")
            sick.add(str(parent or device_uuid))
            if index := _DEVICE_INDEX_RE.match(device_name or ""):
                sick_index.add((node_name, int(index["index"])))
    changed = 0
    # Only cards that are or may become unhealthy: a cold sync must not read every card of the page.
    candidates = Q(healthy=False) | Q(uuid__in=sick)
    if sick_index:
        candidates |= Q(node__name__in={n for n, _ in sick_index}, index__in={i for _, i in sick_index})
    for gpu in (
        Gpu.objects.filter(node__cluster=ctx.cluster, node__name__in=names)
        .filter(candidates)
        .select_related("node")
    ):
        unhealthy = gpu.uuid in sick if gpu.uuid else (gpu.node.name, gpu.index) in sick_index
        if gpu.healthy == unhealthy:
            gpu.healthy = not unhealthy
            gpu.save(update_fields=["healthy"])
            changed += 1
    return changed


_DEVICE_INDEX_RE = re.compile(r"^gpu-(?P<index>\d+)(?:-|$)")
