"""What a usage source returns for one cluster-hour: aggregates per series, never raw samples."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Protocol

UTILISATION = "utilisation"  # total: sum of per-point ratios of the unit (0-1)
MEMORY = "memory"  # total: sum of per-point MiB
ENERGY = "energy"  # total: the counter's increase over the hour in mJ (resets handled)

SHARE_SCOPE = "share"  # grouped by card, GPU instance and pod labels (what the exporter attributes)
CARD_SCOPE = "card"  # grouped by card and GPU instance only (the card's own usage)
HAMI_SCOPE = "hami"  # HAMi monitor, per container's pod and device


@dataclass(frozen=True)
class SeriesReading:
    meter: str
    scope: str
    uuid: str
    total: Decimal
    samples: int  # points of the hour with a usable sample (NaN and negative ones are not usable)
    gpu_instance: str = ""
    profile: str = ""
    host: str = ""
    namespace: str = ""
    pod: str = ""
    variant: int = 0  # which of the configured metric names answered (0 = the preferred one)


@dataclass(frozen=True)
class QueryCost:
    """One query the source sent: what it asked, for which chunk, and the samples it read (Prometheus'
    own count where it reports one, else the estimate series x points that sized the chunk)."""

    label: str
    chunk: str
    estimated_samples: int
    samples: int | None
    series: int


@dataclass
class HourReadings:
    hour: datetime
    step_seconds: int
    readings: list[SeriesReading] = field(default_factory=list)
    queries: list[QueryCost] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class UsageSourceError(Exception):
    """The source could not answer for the hour (down, slow, 5xx, a malformed answer): nothing of the
    hour is written from it, the attempt is recorded and the hour retried."""


@dataclass(frozen=True)
class CardPlan:
    """What the inventory knows of one card, for sizing queries and for attributing what comes back."""

    uuid: str
    node: str
    mode: str  # exclusive, mig, split (time-slicing or MPS), hami


@dataclass(frozen=True)
class Holder:
    """One allocation holding during the hour, seconds [start, stop) of it."""

    share_key: str
    namespace: str
    pod: str
    node: str
    card_uuid: str  # "" where the inventory does not know the card (device-plugin pods)
    ge: Decimal  # GE of the whole allocation
    count: int  # units held (cards, GPU instances, replicas)
    start: int
    stop: int
    mode: str  # exclusive, mig, split, hami


@dataclass(frozen=True)
class HourPlan:
    """What the inventory knows of a cluster-hour: its cards and who held what."""

    hour: datetime
    cards: tuple[CardPlan, ...]
    holders: tuple[Holder, ...]
    mig_instances: int = 0

    @property
    def has_split_cards(self) -> bool:
        """Whether any card's usage must be read per card (time-slicing, MPS): else those queries
        are skipped, as nothing would use their answer."""
        return any(c.mode == "split" for c in self.cards) or any(h.mode == "split" for h in self.holders)

    @property
    def expected_series(self) -> int:
        """Series a metric is expected to have: one per card, GPU instance and holder (a pod's
        series beside its card's idle one); sizes the chunks."""
        return len(self.cards) + self.mig_instances + len(self.holders)


class UsageSource(Protocol):
    name: str  # stored as UsageHour.source: "prometheus", "simulated"

    def read_hour(self, *, plan: HourPlan) -> HourReadings:
        """Per-series aggregates of the hour [plan.hour, plan.hour + 1h). Raises UsageSourceError."""
        ...


@dataclass(frozen=True)
class XidReading:
    """One card's XID gauge over a window, as one group of labels (UUID, index, hosts) showed it."""

    uuid: str
    index: str
    hosts: tuple[str, ...]  # every non-empty host label value of the group
    points: int  # scrape steps of the window with a sample
    codes: frozenset[int]  # the XID codes the gauge held at those steps (0: none yet)


@dataclass
class XidWindow:
    start: datetime
    end: datetime
    step_seconds: int
    readings: list[XidReading] = field(default_factory=list)
    queries: list[QueryCost] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def expected_points(self) -> int:
        return int((self.end - self.start).total_seconds()) // self.step_seconds
