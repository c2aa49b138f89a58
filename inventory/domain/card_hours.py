"""The card-hour split (DESIGN §3, "Physical capacity is cards"), for metering to charge from.

For one card over an interval, each holder is charged its GE / max(1, the holders' GE sum on that card)
of the card-hours, and what is left is idle. Holders whose card is not known (device-plugin pods name
a resource, not a card) are split over their node the same way, the node holding `cards` card-hours an
hour. So units sharing a card that sum above one card (4g.40gb + 3g.40gb = 4/7 + 1/2 on an H100) are
scaled down to exactly the card, units that sum below it leave the rest idle, and for every interval
charged + idle = cards x hours, exactly: Fraction arithmetic, never floats.

Pure: no Django. Metering passes holders as plain (key, GE) pairs; times are its business.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["CardHourSplit", "Holding", "split_card_hours", "split_node_hours"]


@dataclass(frozen=True, slots=True)
class Holding:
    """One holder's units on the card (or node): its key (allocation id, tenant...) and their GE."""

    holder: str
    ge: Fraction


@dataclass(frozen=True, slots=True)
class CardHourSplit:
    card_hours: Fraction  # cards x hours: what the split accounts for
    charged: Mapping[str, Fraction]  # card-hours per holder
    idle: Fraction
    scale: Fraction  # 1 / max(1, GE sum per card): 1 unless the holders oversubscribe the cards

    @property
    def charged_total(self) -> Fraction:
        return sum(self.charged.values(), Fraction(0))


def split_node_hours(*, holdings: Iterable[Holding], cards: int, hours: Fraction) -> CardHourSplit:
    """Split `cards` x `hours` among holders whose card on the node is unknown.

    Each is charged hours x GE / max(1, GE sum / cards): the node's cards are the denominator, so
    8 GE held on an 8-card node is charged in full and 10 GE (oversubscribed MIG layouts) is scaled by
    8/10. A holder listed twice is charged for both."""
    if cards < 0 or hours < 0:
        raise ValueError("cards and hours cannot be negative")
    rows = list(holdings)
    if any(h.ge < 0 for h in rows):
        raise ValueError("a holding's GE cannot be negative")
    total = sum((h.ge for h in rows), Fraction(0))
    card_hours = Fraction(cards) * hours
    if cards == 0:
        # No card to charge: nothing is charged, whatever is claimed on it (a vanished node).
        return CardHourSplit(card_hours, {h.holder: Fraction(0) for h in rows}, Fraction(0), Fraction(0))
    scale = 1 / max(Fraction(1), total / cards)
    charged: dict[str, Fraction] = {}
    for h in rows:
        charged[h.holder] = charged.get(h.holder, Fraction(0)) + hours * h.ge * scale
    idle = card_hours - sum(charged.values(), Fraction(0))
    return CardHourSplit(card_hours, charged, idle, scale)


def split_card_hours(*, holdings: Iterable[Holding], hours: Fraction) -> CardHourSplit:
    """One card over `hours`: each holder pays GE / max(1, GE sum) of it; the rest is idle."""
    return split_node_hours(holdings=holdings, cards=1, hours=hours)
