"""Per-share usage lines from one hour's readings: who used what, and how we know.

- ``share``: the data plane reported it per share: DCGM pod labels on a whole card or a MIG instance
  (``GPU_I_ID``), the HAMi monitor per container.
- ``split_by_allocation``: the card's own usage split among its holders by GE x seconds held, where
  the data plane cannot tell them apart (time-slicing and MPS under DCGM; energy, which is per card).
- ``unattributed``: usage no allocation explains (a pod the ledger does not know, a busy card nobody
  held), kept under ``unattributed/<card or pod>``, never dropped.

Coverage: a share's expected samples are the scrape points inside the seconds it held, [start, stop)
(the hour is [H, H+1h): a sample at H belongs to it, one at H+1h to the next); a split line's are the
card's points of the whole hour. Fewer seen than expected is a gap: the line is incomplete, never a zero.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal

from metering.collection.readings import (
    CARD_SCOPE,
    ENERGY,
    HAMI_SCOPE,
    MEMORY,
    SHARE_SCOPE,
    UTILISATION,
    CardPlan,
    Holder,
    HourPlan,
    HourReadings,
    SeriesReading,
)

USED_GE_HOURS = "used_ge_hours"
MEMORY_GIB_HOURS = "memory_gib_hours"
ENERGY_KWH = "energy_kwh"
METER_OF = {UTILISATION: USED_GE_HOURS, MEMORY: MEMORY_GIB_HOURS, ENERGY: ENERGY_KWH}
SHARE, SPLIT, UNATTRIBUTED = "share", "split_by_allocation", "unattributed"
MJ_PER_KWH = Decimal(3_600_000_000)
MIB_PER_GIB = Decimal(1024)


@dataclass
class UsageLine:
    share_key: str
    meter: str
    quantity: Decimal
    attribution: str
    samples_seen: int
    samples_expected: int
    holder: Holder | None = None
    card_key: str = ""
    node: str = ""
    namespace: str = ""

    @property
    def complete(self) -> bool:
        return self.samples_expected == 0 or self.samples_seen >= self.samples_expected


def points_within(start: int, stop: int, step: int) -> int:
    """Scrape points k*step (k = 0 .. 3600/step - 1) with start <= k*step < stop."""
    return max(0, -(-stop // step) - -(-start // step))


def attribute_hour(
    *, plan: HourPlan, readings: HourReadings, profile_ge: dict[str, Decimal] | None = None
) -> list[UsageLine]:
    """The usage lines of one cluster-hour, sorted by (share_key, meter)."""
    hour = _Hour.of(plan, readings.step_seconds, profile_ge or {})
    lines = _Lines()
    _attribute_dcgm_pods(hour, lines, readings)
    _attribute_hami(hour, lines, readings)
    _split_card_usage(hour, lines, readings)
    _expect_samples(hour, lines)
    return lines.finished()


@dataclass(frozen=True)
class _Hour:
    """What the steps read of one cluster-hour: its scrape points and what the inventory knows."""

    step: int  # seconds between scrape points
    points: int  # scrape points in the hour
    per_point: Decimal  # hours one point stands for
    profile_ge: dict[str, Decimal]  # MIG profile -> GE of one instance
    plan: HourPlan
    cards: dict[str, CardPlan]  # by UUID
    holders: dict[str, Holder]  # by share key
    by_pod: dict[tuple[str, str], Holder]  # by (namespace, pod)
    index: _NodeIndex
    # card UUID -> share keys of its holders: the inventory's, then those the pod series name (steps
    # 1 and 2 add them, step 3 splits among them)
    card_holders: dict[str, set[str]]

    @classmethod
    def of(cls, plan: HourPlan, step: int, profile_ge: dict[str, Decimal]) -> _Hour:
        card_holders: dict[str, set[str]] = defaultdict(set)
        for h in plan.holders:
            if h.card_uuid:
                card_holders[h.card_uuid].add(h.share_key)
        return cls(
            step=step,
            points=3600 // step,
            per_point=Decimal(step) / Decimal(3600),
            profile_ge=profile_ge,
            plan=plan,
            cards={c.uuid: c for c in plan.cards},
            holders={h.share_key: h for h in plan.holders},
            by_pod={(h.namespace, h.pod): h for h in plan.holders},
            index=_NodeIndex(plan),
            card_holders=card_holders,
        )

    def mode_of(self, uuid: str) -> str:
        """The card's sharing mode, "" for a card the inventory does not know."""
        card = self.cards.get(uuid)
        return card.mode if card else ""

    def quantity(self, r: SeriesReading, ge: Decimal) -> Decimal:
        """A reading in its meter's unit: GE-hours at ``ge`` per unit busy, GiB-hours, kWh."""
        if r.meter == UTILISATION:
            return r.total * self.per_point * ge
        if r.meter == MEMORY:
            return r.total * self.per_point / MIB_PER_GIB
        return r.total / MJ_PER_KWH


class _Lines:
    """The hour's usage lines by (share key, meter), summed as the steps add to them."""

    def __init__(self) -> None:
        self.by_key: dict[tuple[str, str], UsageLine] = {}

    def add(
        self,
        key: str,
        meter: str,
        quantity: Decimal,
        attribution: str,
        seen: int,
        expected: int,
        *,
        holder: Holder | None = None,
        card_key: str = "",
        node: str = "",
        namespace: str = "",
    ) -> None:
        """Add to the line, created on first use with this attribution and these details."""
        line = self.by_key.get((key, meter))
        if line is None:
            line = self.by_key[(key, meter)] = UsageLine(
                key, meter, Decimal(0), attribution, 0, 0, holder, card_key, node, namespace
            )
        line.quantity += quantity
        line.samples_seen += seen
        line.samples_expected += expected

    def finished(self) -> list[UsageLine]:
        """The lines in order, a holder's node and namespace filled in, never more seen than expected."""
        for line in self.by_key.values():
            if line.holder is not None:
                line.node = line.node or line.holder.node
                line.namespace = line.holder.namespace
            line.samples_seen = min(line.samples_seen, line.samples_expected)
        return [self.by_key[k] for k in sorted(self.by_key)]


def _attribute_dcgm_pods(hour: _Hour, lines: _Lines, readings: HourReadings) -> None:
    """Step 1. DCGM series carrying pod labels, on cards whose units the exporter can tell apart."""
    for r in _preferred(readings.readings, SHARE_SCOPE):
        if r.meter == ENERGY:
            continue
        holder = hour.by_pod.get((r.namespace, r.pod)) if r.pod else None
        if hour.mode_of(r.uuid) in ("split", "hami") or (
            holder is not None and holder.mode in ("split", "hami")
        ):
            if holder is not None and r.uuid:
                # The exporter names who runs on the card: its usage is theirs (step 3), not shared
                # with the node's holders of other cards.
                hour.card_holders[r.uuid].add(holder.share_key)
            continue
        meter = METER_OF[r.meter]
        if holder is not None:
            used = hour.quantity(r, holder.ge / holder.count)
            lines.add(holder.share_key, meter, used, SHARE, r.samples, 0, holder=holder,
                      card_key=r.uuid)  # fmt: skip
            hour.card_holders[r.uuid].add(holder.share_key)
        elif r.total > 0:
            ge = hour.profile_ge.get(r.profile, Decimal(1)) if r.gpu_instance else Decimal(1)
            who = f"{r.namespace}/{r.pod}" if r.pod else _card_name(r)
            lines.add(f"unattributed/{who}", meter, hour.quantity(r, ge), UNATTRIBUTED, r.samples, r.samples,
                      card_key=r.uuid, node=_node(hour.cards, r), namespace=r.namespace)  # fmt: skip


def _attribute_hami(hour: _Hour, lines: _Lines, readings: HourReadings) -> None:
    """Step 2. HAMi: per container, summed per pod and card."""
    for r in _preferred(readings.readings, HAMI_SCOPE):
        holder = hour.by_pod.get((r.namespace, r.pod))
        meter = METER_OF[r.meter]
        if holder is not None:
            lines.add(holder.share_key, meter, hour.quantity(r, Decimal(1)), SHARE, r.samples, 0,
                      holder=holder, card_key=r.uuid)  # fmt: skip
            hour.card_holders[r.uuid].add(holder.share_key)
        elif r.total > 0:
            who = f"unattributed/{r.namespace}/{r.pod}"
            lines.add(who, meter, hour.quantity(r, Decimal(1)), UNATTRIBUTED, r.samples, r.samples,
                      card_key=r.uuid, node=_node(hour.cards, r), namespace=r.namespace)  # fmt: skip


def _split_card_usage(hour: _Hour, lines: _Lines, readings: HourReadings) -> None:
    """Step 3. Time-slicing and MPS cards, and every card's energy: the card's usage split by
    allocation (GE x seconds held); a card nobody held is unattributed."""
    card_totals: dict[tuple[str, str], list[SeriesReading]] = defaultdict(list)
    for r in _preferred(readings.readings, CARD_SCOPE):
        if (
            r.meter == ENERGY
            or hour.mode_of(r.uuid) == "split"
            or (r.uuid not in hour.cards and _split_host(hour.index, r))
        ):
            card_totals[(r.uuid, r.meter)].append(r)
    for (uuid, meter_kind), parts in sorted(card_totals.items()):
        meter = METER_OF[meter_kind]
        total = sum((p.total for p in parts), Decimal(0))
        seen = min(hour.points, max(p.samples for p in parts))
        sample = parts[0]
        node = _node(hour.cards, sample)
        pot = _pot(hour.index, hour.holders, hour.card_holders, uuid, node, meter_kind)
        weights = {h.share_key: h.ge / h.count * (h.stop - h.start) for h in pot}
        weight_sum = sum(weights.values(), Decimal(0))
        card = SeriesReading(meter_kind, CARD_SCOPE, uuid, total, seen)
        amount = hour.quantity(card, Decimal(1))  # 1 card
        if not pot or weight_sum == 0:
            if total > 0 or seen < hour.points:
                lines.add(f"unattributed/{_card_name(sample)}", meter, amount, UNATTRIBUTED, seen,
                          hour.points, card_key=uuid, node=node)  # fmt: skip
            continue
        for h in pot:
            share = amount * weights[h.share_key] / weight_sum
            lines.add(h.share_key, meter, share, SPLIT, seen, hour.points, holder=h,
                      card_key=uuid if h.card_uuid else "")  # fmt: skip


def _expect_samples(hour: _Hour, lines: _Lines) -> None:
    """Step 4. Expected samples of share lines, and holders nothing was read for: incomplete, not zero."""
    for h in hour.plan.holders:
        within = points_within(h.start, h.stop, hour.step)
        for meter in (USED_GE_HOURS, MEMORY_GIB_HOURS, ENERGY_KWH):
            line = lines.by_key.get((h.share_key, meter))
            if line is None:
                # Nothing read for it: a gap (seen 0 of n), shown, never a complete zero.
                how = SPLIT if meter == ENERGY_KWH or h.mode == "split" else SHARE
                units = 1 if h.mode in ("split", "hami") else h.count
                lines.add(h.share_key, meter, Decimal(0), how, 0, within * units, holder=h)
            elif line.attribution == SHARE:
                line.samples_expected = within * h.count
                line.samples_seen = min(line.samples_seen, line.samples_expected)


def _card_name(r: SeriesReading) -> str:
    """A card as its samples name it; a sample missing the UUID label is named by its host, else kept
    as ``unknown-card``: still counted, never dropped."""
    card = r.uuid or (f"host/{r.host}" if r.host else "unknown-card")
    return card + (f"/gi{r.gpu_instance}" if r.gpu_instance else "")


def _preferred(readings: list[SeriesReading], scope: str) -> list[SeriesReading]:
    """Readings of one scope; where one series answered under two configured names (HAMi's current
    and legacy names both exported), the preferred name only, so nothing counts twice."""
    best: dict[tuple[str, ...], SeriesReading] = {}
    for r in readings:
        if r.scope != scope:
            continue
        key = (r.meter, r.uuid, r.gpu_instance, r.namespace, r.pod, r.host)
        if key not in best or r.variant < best[key].variant:
            best[key] = r
    return [best[k] for k in sorted(best)]


def _node(cards: dict, r: SeriesReading) -> str:
    card = cards.get(r.uuid)
    return card.node if card else r.host


class _NodeIndex:
    """Per node, which are split (time-slicing, MPS) and who holds there without a known card: looked
    up per card, so an hour of 40,000 cards and 10,000 holders stays linear."""

    def __init__(self, plan: HourPlan) -> None:
        self.split = {c.node for c in plan.cards if c.mode == "split"} | {
            h.node for h in plan.holders if h.mode == "split"
        }
        self.cardless: dict[str, list[Holder]] = defaultdict(list)
        for h in plan.holders:
            if not h.card_uuid:
                self.cardless[h.node].append(h)


def _split_host(index: _NodeIndex, r: SeriesReading) -> bool:
    """A card the inventory does not know by UUID, on a time-sliced or MPS node named by its host label."""
    return r.host in index.split


def _pot(
    index: _NodeIndex,
    holders: dict[str, Holder],
    card_holders: dict[str, set[str]],
    uuid: str,
    node: str,
    meter: str,
) -> list[Holder]:
    """Who shares a card's usage: the holders known on the card (by the inventory or by pod labels);
    else, on a split node, its holders whose card is unknown (device-plugin replicas)."""
    known = sorted(card_holders.get(uuid, ()))
    if known:
        return [holders[k] for k in known]
    return [h for h in index.cardless.get(node, ()) if h.mode == "split" or meter == ENERGY]
