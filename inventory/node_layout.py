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
from dataclasses import dataclass, field, replace
from decimal import Decimal
from fractions import Fraction

from inventory.domain.dra_capacity import amount_text, shared_capacity_from_json
from inventory.domain.gpu_models import resolve_gpu_model
from inventory.fragmentation.geometry import first_fit_layout
from inventory.models import Allocation, Gpu, Node, ShareableUnit

# Okabe & Ito's palette, safe for the common colour-vision deficiencies; black is kept for text.
# Each pair is (fill, text colour readable on it): whichever of black and white contrasts more, so
# every label reaches WCAG AA's 4.5:1 (white on the green was 3.4:1, on the vermillion 4.1:1).
OKABE_ITO = (
    ("#E69F00", "#000000"),  # orange
    ("#56B4E9", "#000000"),  # sky blue
    ("#009E73", "#000000"),  # bluish green
    ("#F0E442", "#000000"),  # yellow
    ("#0072B2", "#FFFFFF"),  # blue
    ("#D55E00", "#000000"),  # vermillion
    ("#CC79A7", "#000000"),  # reddish purple
)
UNASSIGNED_COLOUR = "#BBBBBB"
FREE_COLOUR = "transparent"


def tenant_colour(slug: str | None) -> str:
    """A stable colour per tenant across pages (grey for the unassigned bucket). Two tenants may share
    one of the seven; a page drawing several tenants assigns them distinct colours (``palette_for``)."""
    if not slug:
        return UNASSIGNED_COLOUR
    return OKABE_ITO[int(hashlib.sha256(slug.encode()).hexdigest()[:4], 16) % len(OKABE_ITO)][0]


def palette_for(slugs: set[str]) -> dict[str, tuple[str, str]]:
    """Distinct palette colours for the tenants on one page, in slug order (cycling past seven: the
    labels beside each block keep them apart then)."""
    named = sorted(s for s in slugs if s and s != "unassigned")
    colours = {slug: OKABE_ITO[i % len(OKABE_ITO)] for i, slug in enumerate(named)}
    colours["unassigned"] = (UNASSIGNED_COLOUR, "#000000")
    return colours


@dataclass(frozen=True)
class Block:
    label: str
    width: float  # percent of a card
    colour: str
    holder: str
    tenant: str  # the holding tenant's slug, "unassigned", or "" when free
    text: str = "#000000"
    start: int | None = None  # first memory slice of a MIG instance, where its place is known
    size: int | None = None  # memory slices it spans
    inferred: bool = False  # placed first-fit: the device plugin gives counts per node, not places
    # A claim's binding conditions for this device in words (KEP-5007), as the allocations page says
    # them (Allocation.binding, from inventory.domain.dra_claims.binding_words); "" when it has none.
    binding: str = ""


@dataclass(frozen=True)
class Segment:
    block: Block
    left: float
    width: float


@dataclass
class Card:
    gpu: Gpu
    blocks: list[Block] = field(default_factory=list)
    slices: int = 0  # memory slices of the card's model (8 on A100/H100), 0: not MIG capable
    # Its DRA devices with `bindsToNode` (KEP-5007): a claim allocated one is pinned to this node.
    binds_to_node: list[str] = field(default_factory=list)

    @property
    def segments(self) -> list[Segment]:
        """MIG instances drawn at their slice positions (percent of the card's width)."""
        if not self.slices:
            return []
        placed = sorted((b for b in self.blocks if b.start is not None), key=lambda b: b.start or 0)
        return [
            Segment(block=b, left=100 * (b.start or 0) / self.slices, width=100 * (b.size or 1) / self.slices)
            for b in placed
        ]

    @property
    def flowing(self) -> list[Block]:
        """Blocks without a slice position (whole cards, replicas, shares), drawn side by side."""
        return [b for b in self.blocks if b.start is None or not self.slices]

    @property
    def inferred(self) -> bool:
        return any(b.inferred for b in self.blocks)

    @property
    def binding(self) -> bool:
        """A claim on this card waits for (or failed) its binding: its "Who holds what" opens to say so."""
        return any(b.binding for b in self.blocks)

    @property
    def slice_marks(self) -> list[float]:
        """Left edges (percent) of slices 1..n-1, for the grid lines under the segments."""
        return [100 * i / self.slices for i in range(1, self.slices)] if self.slices else []


@dataclass
class NodeLayout:
    cards: list[Card]
    loose: list[Block]  # units the cluster does not tie to one card and that cannot be placed

    @property
    def legend(self) -> list[tuple[str, str, str]]:
        """(tenant, colour, text colour) of every holder drawn, for the key beside the cards."""
        blocks = [b for card in self.cards for b in card.blocks] + self.loose
        return sorted({(b.tenant, b.colour, b.text) for b in blocks if b.tenant})


def _block(label: str, ge: Decimal, holder: Allocation | None) -> Block:
    slug = holder.tenant.slug if holder and holder.tenant else None
    return Block(
        label=label,
        width=max(float(ge) * 100, 4),
        colour=tenant_colour(slug) if holder else FREE_COLOUR,
        holder=f"{holder.namespace}/{holder.holder_name} ({slug or 'unassigned'})" if holder else "free",
        tenant=(slug or "unassigned") if holder else "",
        binding=holder.binding if holder else "",
    )


def _free_block(ge: Decimal, what: str) -> Block:
    """What shares leave of a shared card, saying how much ("free: 20Gi of 80Gi memory")."""
    return replace(_block("free", ge, None), holder=what)


def _part_words(part: Fraction) -> str:
    """A part of a card in words: "all", "3/4", "about 23%"."""
    if part >= 1:
        return "all"
    simple = part.limit_denominator(64)
    if simple == part:
        return f"{simple.numerator}/{simple.denominator}"
    return f"about {round(part * 100)}%"


def _share_free(unit: ShareableUnit, left: Decimal) -> str:
    """What the shares of a DRA device (KEP-5075) leave of it: of its one capacity, the amount ("60Gi of
    80Gi memory"); of several, the part of the card, as the shares' GE count it (each holds its largest
    fraction of any capacity, so the amounts of each are not known here)."""
    part = (
        min(max(Fraction(left) / Fraction(unit.ge_each), Fraction(0)), Fraction(1))
        if unit.ge_each
        else Fraction(0)
    )
    capacity, policies = shared_capacity_from_json(unit.shared_capacity)
    if len(capacity) != 1:
        return f"{_part_words(part)} of the card"
    ((name, value),) = capacity.items()
    # GE is stored to 18 places: round back to whole units, and to the policy's step where it has one
    policy = policies.get(name)
    step = policy.step if policy is not None and policy.step else Decimal(1)
    amount = Decimal(round(part * Fraction(value) / Fraction(step))) * step
    return f"{amount_text(amount)} of {amount_text(value)} {name}"


def _hami_free(unit: ShareableUnit, held: list[Allocation], left: Decimal) -> str:
    """What HAMi's shares leave of a card: memory (each share's from its pod's annotation) and tasks
    (of the card's split count), else the part of the card by GE."""
    words = []
    if unit.memory_mib:
        used = sum(int((a.details or {}).get("memory_mib") or 0) for a in held)
        free = max(unit.memory_mib - used, 0) * 2**20
        words.append(
            f"{amount_text(Decimal(free))} of {amount_text(Decimal(unit.memory_mib * 2**20))} memory"
        )
    if unit.split_count:
        words.append(f"{max(unit.split_count - len(held), 0)} of {unit.split_count} tasks")
    if not words:
        part = Fraction(left) / Fraction(unit.ge_each) if unit.ge_each else Fraction(0)
        words.append(f"{_part_words(part)} of the card")
    return ", ".join(words)


def _recolour(layout: NodeLayout) -> NodeLayout:
    """Give the tenants drawn on this node distinct palette colours."""
    palette = palette_for(
        {b.tenant for card in layout.cards for b in card.blocks} | {b.tenant for b in layout.loose}
    )

    def paint(block: Block) -> Block:
        if not block.tenant:
            return block
        colour, text = palette[block.tenant]
        return replace(block, colour=colour, text=text)

    for card in layout.cards:
        card.blocks = [paint(b) for b in card.blocks]
    layout.loose = [paint(b) for b in layout.loose]
    return layout


def _place_mig(cards: list[Card], unplaced: list[tuple[ShareableUnit, list[Block]]]) -> list[Block]:
    """MIG instances the device plugin reports per node, dealt to the node's cards in turn (as the
    fragmentation input does) and placed first-fit on each; returns what did not fit anywhere."""
    if not cards:
        return [b for _, blocks in unplaced for b in blocks]
    dealt: dict[int, list[Block]] = defaultdict(list)
    for _, blocks in unplaced:
        for i, block in enumerate(blocks):
            dealt[i % len(cards)].append(block)
    left: list[Block] = []
    for position, blocks in dealt.items():
        card = cards[position]
        model = resolve_gpu_model(product=card.gpu.product, memory_mib=card.gpu.memory_mib)
        waiting: dict[str, list[Block]] = defaultdict(list)
        for block in blocks:
            waiting[block.label].append(block)
        for instance in first_fit_layout(model=model, profiles=[b.label for b in blocks]):
            profile = model.mig_profile(instance.profile)
            block = waiting[instance.profile].pop(0)
            size = profile.memory_slices if profile else None
            card.blocks.append(replace(block, start=instance.start, size=size, inferred=True))
        left.extend(b for queue in waiting.values() for b in queue)
    return left


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
    # Oldest holder first, so a resource's units are handed out in a stable order page after page.
    # With its claim in the same query: a claim's binding words are read from its stored results.
    held = list(
        Allocation.objects.filter(node=node, ended_at__isnull=True)
        .select_related("tenant", "claim")
        .order_by("started_at", "pk")
    )
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
    cards = {gpu.index: Card(gpu=gpu, slices=_slices(gpu)) for gpu in gpus}
    dra_index = _dra_card_index([u for u in units if u.kind == "dra_device"])
    gpu_index = {gpu.pk: gpu.index for gpu in gpus}
    loose: list[Block] = []
    unplaced_mig: list[tuple[ShareableUnit, list[Block]]] = []
    for unit in units:
        keyed = by_key.get(unit.key) or by_key.get(unit.key.split("@", 1)[0])
        if unit.kind == "hami_gpu" or unit.shared_capacity:
            # One card shared by many (HAMi, or a DRA device with shares, KEP-5075): each holder is a
            # block as wide as the GE it holds, and what they leave of the card is free.
            blocks = [_block("share", a.ge, a) for a in keyed or []]
            left = max(unit.ge_each - sum((a.ge for a in keyed or []), Decimal(0)), Decimal(0))
            if left > 0 or not blocks:
                free = (
                    _hami_free(unit, keyed or [], left)
                    if unit.kind == "hami_gpu"
                    else _share_free(unit, left)
                )
                blocks.append(_free_block(left, free))
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
        if unit.mig_profile and unit.placement_start is not None:
            # The cluster said where the instance sits (DRA MIG devices): draw it there.
            blocks = [replace(b, start=unit.placement_start, size=unit.placement_size) for b in blocks]
        index = gpu_index.get(unit.gpu_id) if unit.gpu_id is not None else dra_index.get(unit.pk)
        if index is not None and index in cards:
            cards[index].blocks.extend(blocks)
            if unit.binds_to_node:
                cards[index].binds_to_node.append(unit.device_name or unit.key)
        elif unit.kind == "mig_instance":
            unplaced_mig.append((unit, blocks))
        else:
            loose.extend(blocks)
    ordered = list(cards.values())
    loose.extend(_place_mig([c for c in ordered if c.slices], unplaced_mig))
    return _recolour(NodeLayout(cards=ordered, loose=loose))


def _slices(gpu: Gpu) -> int:
    return resolve_gpu_model(product=gpu.product, memory_mib=gpu.memory_mib).mig_memory_slices
