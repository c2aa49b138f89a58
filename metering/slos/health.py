"""GPU health per bucket (docs/slos.md): a card is bad when the inventory holds it unhealthy or its DCGM
XID gauge held a critical code at any step of the bucket; good when neither and its XID gauge was seen
at every step; otherwise unknown, left out of the bucket (a gap never passes for health). Every card of
a cluster whose Prometheus did not answer is unknown."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from metering.collection.readings import XidReading


@dataclass(frozen=True)
class Card:
    key: str
    cluster: str
    healthy: bool  # as the inventory holds it
    uuid: str  # "" where the inventory does not know it (device-plugin nodes)
    node: str
    index: int


@dataclass(frozen=True)
class ClusterXids:
    readings: list[XidReading] | None  # None: the cluster's Prometheus did not answer
    expected_points: int  # scrape steps in the bucket
    critical: frozenset[int]


@dataclass(frozen=True)
class Verdict:
    good: list[str]
    bad: list[str]
    unknown: list[str]


def judge(cards: Iterable[Card], clusters: dict[str, ClusterXids]) -> Verdict:
    """Each card's verdict for the bucket. A cluster absent from ``clusters`` has no Prometheus to
    read XIDs from: its cards are judged on the inventory's word alone."""
    indexes = {name: _Index(c.readings) for name, c in clusters.items() if c.readings is not None}
    good: list[str] = []
    bad: list[str] = []
    unknown: list[str] = []
    for card in cards:
        watched = clusters.get(card.cluster)
        if watched is not None and card.cluster not in indexes:
            # Its Prometheus did not answer: nothing of the cluster is measured, its known faults
            # neither (counting only those would read as a cluster of broken cards and page people).
            unknown.append(card.key)
        elif not card.healthy:
            bad.append(card.key)
        elif watched is None:
            good.append(card.key)
        else:
            found = indexes[card.cluster].of(card)
            codes = frozenset().union(*(r.codes for r in found))
            if codes & watched.critical:
                bad.append(card.key)
            elif found and max(r.points for r in found) >= watched.expected_points > 0:
                good.append(card.key)
            else:
                unknown.append(card.key)  # a gap, or no XID series at all for it
    return Verdict(good, bad, unknown)


class _Index:
    """XID groups by card UUID, and by (host, GPU index) for cards the inventory knows by node only;
    the host labels may name the exporter pod (old builds) or the node (``node`` from relabelling)."""

    def __init__(self, readings: list[XidReading]) -> None:
        self.by_uuid: dict[str, list[XidReading]] = {}
        self.by_slot: dict[tuple[str, str], list[XidReading]] = {}
        for r in readings:
            if r.uuid:
                self.by_uuid.setdefault(r.uuid.lower(), []).append(r)
            for host in r.hosts:
                self.by_slot.setdefault((host, r.index), []).append(r)

    def of(self, card: Card) -> list[XidReading]:
        found = list(self.by_uuid.get(card.uuid.lower(), ())) if card.uuid else []
        for r in self.by_slot.get((card.node, str(card.index)), ()):
            if r not in found and (not card.uuid or not r.uuid or r.uuid.lower() == card.uuid.lower()):
                found.append(r)
        return found
