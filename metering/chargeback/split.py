"""Split one node's hour among the holders of its cards, exact to the second.

The card-hour rule (inventory/domain/card_hours.py) holds at each instant: a holder pays
GE / max(1, the GE sum on its card) of the card. Holders come and go inside an hour, so the hour is
cut at every start and end and each piece is split on its own; summing per-hour GE-hours first would
mis-charge (1 GE all hour beside 1 GE for its first half: 0.75 + 0.25 at each instant, not 2/3 + 1/3).

Holders whose card is known (a HAMi share, a DRA device, a whole GPU by index) are split per card.
Holders whose card is not known (device-plugin pods name a resource, not a card) share the node's
other cards: those no known holder sits on during the piece. Whatever is not charged is idle, so per
node and hour, charged + idle = cards x seconds / 3600 exactly (Fractions).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction

from inventory.domain.card_hours import Holding, split_card_hours, split_node_hours

__all__ = ["HourSplit", "NodeHolding", "split_node_hour"]

SECONDS_PER_HOUR = 3600


@dataclass(frozen=True, slots=True)
class NodeHolding:
    """A holder's interval inside the hour, in seconds from the hour's start (0 <= start < end <= 3600)."""

    holder: str
    ge: Fraction
    start: int
    end: int
    card: str | None = None  # the card it sits on, when the data plane says


@dataclass(slots=True)
class HourSplit:
    card_hours: Fraction  # cards x hours the node offered
    charged: dict[str, Fraction] = field(default_factory=dict)  # card-hours per holder
    idle: Fraction = Fraction(0)

    @property
    def charged_total(self) -> Fraction:
        return sum(self.charged.values(), Fraction(0))


def split_node_hour(
    *, holdings: Iterable[NodeHolding], cards: int, seconds: int = SECONDS_PER_HOUR
) -> HourSplit:
    """Charge each holding its card-hours by the card-hour rule, piece by piece; the rest is idle."""
    rows = list(holdings)
    for h in rows:
        if not 0 <= h.start <= h.end <= seconds:
            raise ValueError(f"holding {h.holder} lies outside the hour: {h.start}..{h.end}")
        if h.ge < 0:
            raise ValueError(f"holding {h.holder} has negative GE")
    result = HourSplit(card_hours=Fraction(cards * seconds, SECONDS_PER_HOUR))
    for h in rows:
        result.charged.setdefault(h.holder, Fraction(0))
    cuts = sorted({0, seconds, *(h.start for h in rows), *(h.end for h in rows)})
    for lo, hi in itertools.pairwise(cuts):
        hours = Fraction(hi - lo, SECONDS_PER_HOUR)
        live = [h for h in rows if h.start <= lo and h.end >= hi and h.end > h.start]
        on_card: dict[str, list[Holding]] = defaultdict(list)
        unplaced: list[Holding] = []
        for h in live:
            if h.card is None:
                unplaced.append(Holding(h.holder, h.ge))
            else:
                on_card[h.card].append(Holding(h.holder, h.ge))
        # Known cards beyond the node's count (a stale inventory) are still charged, one card each:
        # the data plane says the holder is there; the node's count only bounds the unplaced ones.
        for card_rows in on_card.values():
            for holder, hours_charged in split_card_hours(holdings=card_rows, hours=hours).charged.items():
                result.charged[holder] += hours_charged
        free_cards = max(0, cards - len(on_card))
        if unplaced:
            split = split_node_hours(holdings=unplaced, cards=free_cards, hours=hours)
            for holder, hours_charged in split.charged.items():
                result.charged[holder] += hours_charged
    result.idle = result.card_hours - result.charged_total
    if result.idle < 0:
        # Only when known cards outnumber the node's cards: the offered capacity is what was used.
        result.card_hours -= result.idle
        result.idle = Fraction(0)
    return result
