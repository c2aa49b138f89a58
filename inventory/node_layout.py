"""What the node page draws: each card with the units on it, and who holds each one.

Read-only. Allocations are matched to units by unit key where the ledger knows it (HAMi shares, DRA
devices); device-plugin holders only name a resource, so they fill that resource's units in order.
DRA devices are not tied to a Gpu row by the sync (slices name devices, not card indexes): they are
placed on cards by their ``index`` attribute, or for MIG devices by the PCIe bus of their parent card.
"""

from __future__ import annotations

import hashlib
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

from inventory.models import Allocation, Gpu, Node, ShareableUnit

UNASSIGNED_COLOUR = "#9aa5b1"


def tenant_colour(slug: str | None) -> str:
    """A stable colour per tenant, grey for the unassigned bucket."""
    if not slug:
        return UNASSIGNED_COLOUR
    hue = int(hashlib.sha256(slug.encode()).hexdigest()[:4], 16) % 360
    return f"hsl({hue} 65% 48%)"


@dataclass(frozen=True)
class Block:
    label: str
    width: float  # percent of a card
    colour: str
    holder: str
    tenant: str  # the holding tenant's slug, "unassigned", or "" when free


@dataclass
class Card:
    gpu: Gpu
    blocks: list[Block] = field(default_factory=list)


@dataclass
class NodeLayout:
    cards: list[Card]
    loose: list[Block]  # units the cluster does not tie to one card (MIG groups of a mixed node)

    @property
    def legend(self) -> list[tuple[str, str]]:
        """(tenant, colour) of every holder drawn, for the key under the cards."""
        blocks = [b for card in self.cards for b in card.blocks] + self.loose
        return sorted({(b.tenant, b.colour) for b in blocks if b.tenant})


def _block(label: str, ge: Decimal, holder: Allocation | None) -> Block:
    slug = holder.tenant.slug if holder and holder.tenant else None
    return Block(
        label=label,
        width=max(float(ge) * 100, 4),
        colour=tenant_colour(slug) if holder else "transparent",
        holder=f"{holder.namespace}/{holder.holder_name} ({slug or 'unassigned'})" if holder else "free",
        tenant=(slug or "unassigned") if holder else "",
    )


def _dra_card_index(units: list[ShareableUnit]) -> dict[uuid.UUID, int]:
    """Unit id -> card index for DRA devices: by ``index``, else by rank of the PCIe bus id."""
    buses = sorted({str(u.attributes.get("pcieBusID")) for u in units if u.attributes.get("pcieBusID")})
    by_bus = {
        str(u.attributes["pcieBusID"]): int(u.attributes["index"])
        for u in units
        if isinstance(u.attributes.get("index"), int) and u.attributes.get("pcieBusID")
    }
    placed: dict[uuid.UUID, int] = {}
    for unit in units:
        index = unit.attributes.get("index")
        bus = str(unit.attributes.get("pcieBusID", ""))
        if isinstance(index, int):
            placed[unit.pk] = index
        elif bus in by_bus:
            placed[unit.pk] = by_bus[bus]
        elif bus in buses:
            placed[unit.pk] = buses.index(bus)
    return placed


def node_layout(*, node: Node) -> NodeLayout:
    """The node's cards with their unit blocks, coloured by holding tenant. Three queries."""
    held = list(Allocation.objects.filter(node=node, ended_at__isnull=True).select_related("tenant"))
    gpus = list(node.gpus.order_by("index"))
    units = list(node.units.order_by("key"))
    # A DRA unit's key carries "@<slice>"; the ledger names the device as claims do, without it.
    unit_keys = {unit.key for unit in units} | {unit.key.split("@", 1)[0] for unit in units}
    by_key: dict[str, list[Allocation]] = defaultdict(list)
    by_resource: dict[str, list[Allocation]] = defaultdict(list)
    for allocation in held:
        if allocation.unit_key in unit_keys:
            by_key[allocation.unit_key].append(allocation)
        else:  # device-plugin holders name a resource, not a unit: they fill its units in order
            by_resource[allocation.resource_name].extend([allocation] * allocation.count)
    cards = {gpu.index: Card(gpu=gpu) for gpu in gpus}
    dra_index = _dra_card_index([u for u in units if u.kind == "dra_device"])
    gpu_index = {gpu.pk: gpu.index for gpu in gpus}
    loose: list[Block] = []
    for unit in units:
        keyed = by_key.get(unit.key) or by_key.get(unit.key.split("@", 1)[0])
        if unit.kind == "hami_gpu":
            # One card shared by many: each holder is a block of its own size.
            blocks = [_block("share", a.ge, a) for a in keyed or []] or [_block("free", Decimal(1), None)]
        else:
            holders = list(keyed) if keyed else by_resource.get(unit.resource_name, [])
            blocks = [
                _block(
                    unit.mig_profile or unit.kind.replace("_", " "),
                    unit.ge_each,
                    holders.pop(0) if holders else None,
                )
                for _ in range(unit.count)
            ]
        index = gpu_index.get(unit.gpu_id) if unit.gpu_id is not None else dra_index.get(unit.pk)
        if index is not None and index in cards:
            cards[index].blocks.extend(blocks)
        else:
            loose.extend(blocks)
    return NodeLayout(cards=list(cards.values()), loose=loose)
