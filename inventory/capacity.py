"""One truth for a pool's capacity (DESIGN §3, "Physical capacity is cards"): physical, advertised,
allocated and free, per pool and GPU model. The pool page, the node-pools API, fragmentation and (after
the move to quotas/) flavor capacity and oversubscription read these figures and nothing else.

Two sides, side by side:
  physical   = cards (1 GE each, Gpu rows). Allocated is, node by node, the GE its open allocations
               hold capped at its cards: units sharing a card can sum above it (4g.40gb + 3g.40gb =
               15/14) and device-plugin allocations do not say which card, so the node is the
               denominator, as in the card-hour split (inventory/domain/card_hours.py).
  advertised = the units the nodes offer, and their GE (can be above or below the cards).
On both sides allocated + unavailable + free = capacity, exactly (Decimal at the GE column's places).
Unavailable is what no new holder can be given though the card is there: the unheld part of units
tainted NoSchedule/NoExecute (KEP-5055) or cordoned (HAMi's hami.io/device-cordon), at most one GE a
card however many of its units say so, and never more than what is not allocated.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db.models import Count, F, Sum

from gpuplatform.db.stamped_cache import StampedCache
from inventory.models import Allocation, Gpu, ShareableUnit

__all__ = [
    "KindUnits",
    "ModelCapacity",
    "NotOffered",
    "UnavailableCapacity",
    "cached_pool_card_capacity",
    "pool_card_capacity",
    "pool_model_capacity",
    "pool_resource_free",
    "pools_not_offered",
]

ZERO = Decimal(0)


@dataclass(frozen=True, slots=True)
class KindUnits:
    kind: str
    units: int
    ge: Decimal


@dataclass(frozen=True, slots=True)
class ModelCapacity:
    model_key: str
    cards: int
    allocated_ge: Decimal  # of the cards
    advertised_units: int
    advertised_ge: Decimal
    advertised_allocated_ge: Decimal
    kinds: tuple[KindUnits, ...]
    unavailable_ge: Decimal = ZERO  # of the cards: tainted or cordoned and not held
    advertised_unavailable_ge: Decimal = ZERO
    unavailable: tuple[str, ...] = ()  # why, in words: "1 GPU tainted by gpu.nvidia.com/xid=79:NoSchedule"

    @property
    def physical_ge(self) -> Decimal:
        return Decimal(self.cards)

    @property
    def free_ge(self) -> Decimal:
        return self.physical_ge - self.allocated_ge - self.unavailable_ge

    @property
    def advertised_free_ge(self) -> Decimal:
        return self.advertised_ge - self.advertised_allocated_ge - self.advertised_unavailable_ge


@dataclass(frozen=True, slots=True)
class UnavailableCapacity:
    """Per node, GE of units that are counted but may not be handed out, and why."""

    ge_by_node: dict[tuple[uuid.UUID, uuid.UUID, str], Decimal]  # (pool, node, model) -> GE, <= 1 a card
    reasons: dict[tuple[uuid.UUID, str], tuple[str, ...]]  # (pool, model) -> reasons in words
    cards: dict[tuple[uuid.UUID, str], int] = field(default_factory=dict)  # (pool, model) -> cards blocked


@dataclass(frozen=True, slots=True)
class NotOffered:
    """Cards of one GPU model of a pool that are there but not offered, and why: what a flavor's page,
    the request form and a pending request's reason add to a reduced free capacity."""

    model_key: str
    cards: int  # cards with a tainted or cordoned unit (held or not: no new holder gets one)
    of_cards: int  # the model's cards in the pool
    reasons: tuple[str, ...]

    @property
    def words(self) -> str:
        """ "1 of 8 H100-80GB not offered: 1 GPU tainted by gpu.nvidia.com/xid=79:NoSchedule"."""
        return f"{self.cards} of {self.of_cards} {self.model_key} not offered: {', '.join(self.reasons)}"


@dataclass(slots=True)
class _NodeModel:
    cards: int = 0
    units: int = 0
    ge: Decimal = ZERO
    held: Decimal = ZERO
    blocked: Decimal = ZERO


def unavailable_capacity(*, pool_ids: Iterable[uuid.UUID]) -> UnavailableCapacity:
    """What tainted and cordoned units take out of free capacity. Two queries (the blocked units,
    then what is held of them); a fleet has few such units. Each unit's unheld GE counts once, a
    card's units together at most one GE (a tainted whole GPU and its tainted MIG devices are one
    card), so no taint is counted twice."""
    ids = list(pool_ids)
    units = list(
        ShareableUnit.objects.filter(node__pool_id__in=ids, node__present=True, counted=True)
        .exclude(unavailable="")
        .values_list(
            "pk",
            "node__pool_id",
            "node_id",
            "model_key",
            "count",
            "ge_each",
            "device_uuid",
            "attributes",
            "unavailable",
        )
    )
    if not units:
        return UnavailableCapacity({}, {})
    held = dict(
        Allocation.objects.filter(unit_id__in=[row[0] for row in units], ended_at__isnull=True)
        .values("unit_id")
        .annotate(ge=Sum("ge"))
        .order_by()
        .values_list("unit_id", "ge")
    )
    per_card: dict[tuple[uuid.UUID, uuid.UUID, str, str], Decimal] = defaultdict(Decimal)
    why: dict[tuple[uuid.UUID, str, str], list[tuple[str, bool]]] = defaultdict(list)
    for pk, pool, node, model, count, ge_each, device_uuid, attributes, reason in units:
        parent = (attributes or {}).get("parentUUID") if isinstance(attributes, dict) else None
        card = str(parent or device_uuid or pk)
        free = max(ge_each * count - (held.get(pk) or ZERO), ZERO)
        per_card[(pool, node, model, card)] += free
        why[(pool, model, reason)].append((card, ge_each >= 1 and not parent))
    ge_by_node: dict[tuple[uuid.UUID, uuid.UUID, str], Decimal] = defaultdict(Decimal)
    for (pool, node, model, _card), ge in per_card.items():
        ge_by_node[(pool, node, model)] += min(ge, Decimal(1))
    reasons: dict[tuple[uuid.UUID, str], list[str]] = defaultdict(list)
    for (pool, model, reason), entries in sorted(
        why.items(), key=lambda item: (str(item[0][0]), item[0][1:])
    ):
        cards = len({card for card, _ in entries})
        if all(whole for _, whole in entries):
            reasons[(pool, model)].append(f"{cards} GPU{'s' * (cards != 1)} {reason}")
        else:
            n = len(entries)
            reasons[(pool, model)].append(
                f"{n} device{'s' * (n != 1)} on {cards} GPU{'s' * (cards != 1)} {reason}"
            )
    cards_blocked: dict[tuple[uuid.UUID, str], int] = defaultdict(int)
    for pool, _node, model, _card in per_card:
        cards_blocked[(pool, model)] += 1
    return UnavailableCapacity(
        dict(ge_by_node), {key: tuple(v) for key, v in reasons.items()}, dict(cards_blocked)
    )


def pools_not_offered(
    *, pool_ids: Iterable[uuid.UUID], cards: dict[uuid.UUID, dict[str, int]] | None = None
) -> dict[uuid.UUID, list[NotOffered]]:
    """Per pool, each GPU model with tainted or cordoned cards (sorted by model), from the same reasons
    the pool page shows. One query when nothing is tainted or cordoned, three when something is (two
    when the caller passes the pools' ``cards``, as ``pool_card_capacity`` reads them), whatever the
    pools: a page listing flavors reads it once, not per row."""
    ids = list(pool_ids)
    unavailable = unavailable_capacity(pool_ids=ids)
    result: dict[uuid.UUID, list[NotOffered]] = {pool: [] for pool in ids}
    if not unavailable.cards:
        return result
    if cards is None:
        cards = pool_card_capacity(pool_ids=ids)
    for (pool, model), blocked in sorted(unavailable.cards.items(), key=lambda item: item[0][1]):
        result[pool].append(
            NotOffered(
                model_key=model,
                cards=blocked,
                of_cards=cards.get(pool, {}).get(model, blocked),
                reasons=unavailable.reasons.get((pool, model), ()),
            )
        )
    return result


def pool_model_capacity(*, pool_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, list[ModelCapacity]]:
    """Physical and advertised capacity, allocated and free, per GPU model of each pool (sorted by
    model). Three grouped queries whatever the number of pools and nodes; reads only present nodes
    and counted units (a DRA pool counts once its generation is complete)."""
    ids = list(pool_ids)
    per_node: dict[tuple[uuid.UUID, uuid.UUID, str], _NodeModel] = defaultdict(_NodeModel)
    kinds: dict[tuple[uuid.UUID, str, str], list[Decimal]] = defaultdict(lambda: [ZERO, ZERO])
    for pool, node, model, cards in (
        Gpu.objects.filter(node__pool_id__in=ids, node__present=True)
        .values("node__pool_id", "node_id", "model_key")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("node__pool_id", "node_id", "model_key", "n")
    ):
        per_node[(pool, node, model)].cards += cards
    for pool, node, model, kind, units, ge in (
        ShareableUnit.objects.filter(node__pool_id__in=ids, node__present=True, counted=True)
        .values("node__pool_id", "node_id", "model_key", "kind")
        .annotate(units=Sum("count"), ge=Sum(F("ge_each") * F("count")))
        .order_by()
        .values_list("node__pool_id", "node_id", "model_key", "kind", "units", "ge")
    ):
        entry = per_node[(pool, node, model)]
        entry.units += units
        entry.ge += ge
        by_kind = kinds[(pool, model, kind)]
        by_kind[0] += units
        by_kind[1] += ge
    for pool, node, model, ge in _held_ge(ids, "pool_id", "node_id", "model_key"):
        if (pool, node, model) in per_node:  # a holder of a unit the node no longer offers holds nothing
            per_node[(pool, node, model)].held += ge
    unavailable = unavailable_capacity(pool_ids=ids)
    for key, ge in unavailable.ge_by_node.items():
        if key in per_node:
            per_node[key].blocked += ge
    totals: dict[tuple[uuid.UUID, str], list[Decimal]] = defaultdict(lambda: [ZERO] * 7)  # cards, ...
    for (pool, _node, model), entry in per_node.items():
        total = totals[(pool, model)]
        held_cards = min(entry.held, Decimal(entry.cards))
        held_units = min(entry.held, entry.ge)
        total[0] += entry.cards
        total[1] += held_cards
        total[2] += entry.units
        total[3] += entry.ge
        total[4] += held_units
        # Blocked GE never makes free negative: a held unit's GE is already in allocated.
        total[5] += min(entry.blocked, Decimal(entry.cards) - held_cards)
        total[6] += min(entry.blocked, entry.ge - held_units)
    result: dict[uuid.UUID, list[ModelCapacity]] = {pool: [] for pool in ids}
    for (pool, model), (
        card_total,
        allocated,
        unit_total,
        ge,
        advertised_allocated,
        blocked,
        advertised_blocked,
    ) in sorted(totals.items(), key=lambda item: item[0][1]):
        result[pool].append(
            ModelCapacity(
                model_key=model,
                cards=int(card_total),
                allocated_ge=allocated,
                advertised_units=int(unit_total),
                advertised_ge=ge,
                advertised_allocated_ge=advertised_allocated,
                kinds=tuple(
                    KindUnits(kind, int(n), kind_ge)
                    for (p, m, kind), (n, kind_ge) in sorted(kinds.items())
                    if p == pool and m == model
                ),
                unavailable_ge=blocked,
                advertised_unavailable_ge=advertised_blocked,
                unavailable=unavailable.reasons.get((pool, model), ()),
            )
        )
    return result


def _held_ge(pool_ids: list[uuid.UUID], *keys: str) -> list[tuple[Any, ...]]:
    """Open allocations' GE by `keys`, in one query. The shares of a DRA device several claims use
    (KEP-5075) hold at most that device's GE together: each share's GE is the dominant fraction it
    consumes, and shares dominant in different capacities (memory, a share count) can sum above it."""
    held: dict[tuple[Any, ...], Decimal] = defaultdict(Decimal)
    for *key, kind, unit_ge, ge in (
        Allocation.objects.filter(pool_id__in=pool_ids, ended_at__isnull=True, node__present=True)
        .values(*keys, "unit_id", "unit__kind", "unit__ge_each")
        .annotate(ge=Sum("ge"))
        .order_by()
        .values_list(*keys, "unit__kind", "unit__ge_each", "ge")
    ):
        ge = ge or ZERO
        held[tuple(key)] += min(ge, unit_ge) if kind == "dra_device" and unit_ge is not None else ge
    return [(*key, ge) for key, ge in held.items()]


def pool_card_capacity(*, pool_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, dict[str, int]]:
    """Physical cards per pool and GPU model: what oversubscription compares quota with."""
    ids = list(pool_ids)
    result: dict[uuid.UUID, dict[str, int]] = {pool: {} for pool in ids}
    for pool, model, cards in (
        Gpu.objects.filter(node__pool_id__in=ids, node__present=True)
        .values("node__pool_id", "model_key")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("node__pool_id", "model_key", "n")
    ):
        result[pool][model] = cards
    return result


def cached_pool_card_capacity(*, pool_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, dict[str, int]]:
    """`pool_card_capacity`, cached in this process until a card, a unit or a node's pool or
    presence changes (the stamp of migrations 0002 and 0003): admission may read it under a lock."""
    ids = tuple(sorted(set(pool_ids), key=str))
    return _cards.get(ids, lambda: pool_card_capacity(pool_ids=ids))


_cards: StampedCache[dict[uuid.UUID, dict[str, int]]] = StampedCache("inventory_capacity_stamp")


def pool_resource_free(*, pool_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, dict[str, int]]:
    """Free units per pool and extended resource (native units), never above what is advertised nor
    what the cards hold: on each node, min(advertised - held units, physical free GE / GE of a unit).

    A node advertising 2 whole GPUs and 14 x 1g.10gb over 2 cards, with one 1g.10gb held, has
    2 - 1/7 free GE: 1 whole GPU (not 2) and 13 x 1g.10gb free. Flavor free capacity reads this."""
    ids = list(pool_ids)
    cards: dict[uuid.UUID, int] = defaultdict(int)
    for node, n in (
        Gpu.objects.filter(node__pool_id__in=ids, node__present=True)
        .values("node_id")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("node_id", "n")
    ):
        cards[node] = n
    offered: dict[tuple[uuid.UUID, uuid.UUID, str], list[Decimal]] = defaultdict(lambda: [ZERO, ZERO])
    for pool, node, resource, units, ge in (
        ShareableUnit.objects.filter(node__pool_id__in=ids, node__present=True, counted=True, unavailable="")
        .values("node__pool_id", "node_id", "resource_name")
        .annotate(units=Sum("count"), ge=Sum(F("ge_each") * F("count")))
        .order_by()
        .values_list("node__pool_id", "node_id", "resource_name", "units", "ge")
    ):
        offered[(pool, node, resource)] = [Decimal(units), ge]
    blocked_ge: dict[uuid.UUID, Decimal] = defaultdict(Decimal)
    for (_pool, node, _model), ge in unavailable_capacity(pool_ids=ids).ge_by_node.items():
        blocked_ge[node] += ge
    held_units: dict[tuple[uuid.UUID, str], int] = defaultdict(int)
    held_ge: dict[uuid.UUID, Decimal] = defaultdict(Decimal)
    for node, ge in _held_ge(ids, "node_id"):
        held_ge[node] += ge
    # Units held on tainted or cordoned units are not among those offered: not taken from them. The
    # shares of a DRA device several claims use (KEP-5075) take that one device however many they are;
    # their GE is what they consume of it (held_ge).
    for node, resource, kind, count in (
        Allocation.objects.filter(pool_id__in=ids, ended_at__isnull=True, node__present=True)
        .exclude(unit__unavailable__gt="")
        .values("node_id", "resource_name", "unit_id", "unit__kind")
        .annotate(n=Sum("count"))
        .order_by()
        .values_list("node_id", "resource_name", "unit__kind", "n")
    ):
        held_units[(node, resource)] += min(count or 0, 1) if kind == "dra_device" else count or 0
    result: dict[uuid.UUID, dict[str, int]] = {pool: defaultdict(int) for pool in ids}
    for (pool, node, resource), (units, ge) in offered.items():
        free_units = int(units) - held_units[(node, resource)]
        free_ge = max(Decimal(cards[node]) - held_ge[node] - blocked_ge[node], ZERO)
        each = ge / units if units else ZERO
        # Each GE is rounded to 6 places: 2 / 0.142857 is 14.00001, and 13.99999 must not lose a unit.
        fits = int(free_ge / each + Decimal("0.0001")) if each > 0 else free_units
        result[pool][resource] += max(min(free_units, fits), 0)
    return {pool: dict(per) for pool, per in result.items()}
