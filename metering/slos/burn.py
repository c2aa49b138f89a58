"""Error budgets and burn rates over SLI samples, and the alert rules of the SRE workbook's
"multiwindow, multi-burn-rate alerts": a fast burn pages when the last hour and the last 5 minutes
both burn at 14.4x or more (2% of a 30-day budget in an hour); a slow burn opens a ticket when the
last 6 hours and the last 30 minutes both burn at 6x or more (5% in 6 hours). The short window makes
an alert resolve soon after the burning stops.

A sample is (start, end, good, total) over a bucket of time. A window sums the samples that lie
wholly inside it; buckets never evaluated (no data) count neither good nor bad, and a window with no
events has no burn rate (None), never a made-up zero.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal


@dataclass(frozen=True, slots=True)
class Sample:
    start: datetime
    end: datetime
    good: Decimal
    total: Decimal


@dataclass(frozen=True, slots=True)
class BurnRule:
    name: str
    long: timedelta
    short: timedelta
    factor: Decimal


FAST = BurnRule("fast_burn", timedelta(hours=1), timedelta(minutes=5), Decimal("14.4"))
SLOW = BurnRule("slow_burn", timedelta(hours=6), timedelta(minutes=30), Decimal("6"))
RULES = (FAST, SLOW)


@dataclass(frozen=True, slots=True)
class Window:
    good: Decimal
    total: Decimal

    @property
    def bad(self) -> Decimal:
        return self.total - self.good

    @property
    def sli(self) -> Decimal | None:
        return None if not self.total else self.good / self.total


def window(samples: Iterable[Sample], *, end: datetime, length: timedelta) -> Window:
    start = end - length
    good = total = Decimal(0)
    for sample in samples:
        if sample.start >= start and sample.end <= end:
            good += sample.good
            total += sample.total
    return Window(good, total)


def burn_rate(
    samples: Iterable[Sample], *, objective: Decimal, end: datetime, length: timedelta
) -> Decimal | None:
    """How many times faster than the budget allows errors came in the window: (bad / total) over
    (1 - objective). 1 spends the whole budget in exactly the SLO's window."""
    w = window(samples, end=end, length=length)
    if not w.total:
        return None
    return (w.bad / w.total) / (1 - objective)


def budget_remaining(
    samples: Iterable[Sample], *, objective: Decimal, end: datetime, length: timedelta
) -> Decimal | None:
    """The share of the window's error budget not yet spent: 1 - bad / (total x (1 - objective));
    negative once it is overspent. None before any event."""
    w = window(samples, end=end, length=length)
    if not w.total:
        return None
    return 1 - w.bad / (w.total * (1 - objective))


def firing(
    samples: Iterable[Sample], *, objective: Decimal, end: datetime
) -> dict[str, tuple[Decimal, Decimal]]:
    """The rules that fire at ``end``, each with its (long, short) burn rates."""
    kept = list(samples)
    fired = {}
    for rule in RULES:
        long = burn_rate(kept, objective=objective, end=end, length=rule.long)
        short = burn_rate(kept, objective=objective, end=end, length=rule.short)
        if long is not None and short is not None and long >= rule.factor and short >= rule.factor:
            fired[rule.name] = (long, short)
    return fired
