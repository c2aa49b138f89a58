"""The dashboards' series, pure (no Django): exact figures a test can work by hand.

- ``nearest_rank``: a percentile by nearest rank, the value at rank ceil(q * n) of the sorted values
  (the median of 1, 2, 3, 10 is 2; its P95 is 10). Never interpolated: every figure shown is a wait
  some request really had.
- ``hourly_holding``: GE held on average in each hour, and of it what lay beyond the nominal quota
  (borrowed): the integral of held(t) and of max(0, held(t) - nominal) over the hour, divided by the
  hour. Exact to the second, so an hour half spent 1 GE over quota shows 0.5 borrowed.
- ``month_end_forecast``: the month's run rate so far projected to its end,
  to_date * (month length / time elapsed).
- ``heat_cell``: one card-hour of the pool heatmap, as a percentage of the card and a level 0-4.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from fractions import Fraction

HOUR = timedelta(hours=1)
NEAR_BUDGET = Fraction(8, 10)  # a budget 80 % spent (or forecast over) needs attention


def nearest_rank(values: Sequence[float], q: Fraction) -> float | None:
    """The q-quantile of ``values`` by nearest rank; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True)
class WaitDay:
    day: date
    admitted: int
    median_seconds: float | None
    p95_seconds: float | None


def daily_waits(*, waits: Iterable[tuple[datetime, float]], days: Sequence[date]) -> list[WaitDay]:
    """Median and P95 queue wait of the requests admitted on each of ``days`` (UTC dates), from
    (admitted_at, seconds waited) pairs; a day with no admission has no figures."""
    by_day: dict[date, list[float]] = {day: [] for day in days}
    for admitted_at, seconds in waits:
        if admitted_at.date() in by_day:
            by_day[admitted_at.date()].append(seconds)
    return [
        WaitDay(
            day=day,
            admitted=len(found),
            median_seconds=nearest_rank(found, Fraction(1, 2)),
            p95_seconds=nearest_rank(found, Fraction(95, 100)),
        )
        for day, found in by_day.items()
    ]


@dataclass(frozen=True)
class Interval:
    """A request's hold: from admission to its end (None: still holding), of ``ge`` GE."""

    start: datetime
    end: datetime | None
    ge: Fraction


@dataclass(frozen=True)
class HoldingHour:
    hour: datetime
    held: Fraction  # average GE held over the hour
    borrowed: Fraction  # average GE held beyond the nominal quota


def hourly_holding(
    *, intervals: Sequence[Interval], nominal: Fraction, hours: Sequence[datetime], now: datetime
) -> list[HoldingHour]:
    """Held and borrowed GE of each hour starting at ``hours`` (an open hold runs until ``now``)."""
    out = []
    for start in hours:
        end = min(start + HOUR, max(now, start))
        active = [
            (max(i.start, start), min(i.end or now, end), i.ge)
            for i in intervals
            if i.start < end and (i.end or now) > start
        ]
        cuts = sorted({start, end, *(a for a, _, _ in active), *(b for _, b, _ in active)})
        held = borrowed = Fraction(0)
        for left, right in itertools.pairwise(cuts):
            if right <= left:
                continue
            level = sum((ge for a, b, ge in active if a <= left and b >= right), Fraction(0))
            weight = Fraction(int((right - left).total_seconds()), 3600)
            held += level * weight
            borrowed += max(Fraction(0), level - nominal) * weight
        out.append(HoldingHour(hour=start, held=held, borrowed=borrowed))
    return out


def month_end_forecast(
    *, to_date: Fraction, month_start: datetime, month_end: datetime, now: datetime
) -> Fraction:
    """GE-hours by month end if the rest of the month burns at the rate of the month so far."""
    elapsed = int((min(now, month_end) - month_start).total_seconds())
    if elapsed <= 0:
        return to_date
    return to_date * int((month_end - month_start).total_seconds()) / elapsed


def budget_state(*, limit: Fraction, to_date: Fraction, forecast: Fraction) -> str:
    """over (spent), near (80 % spent), heading-over (forecast beyond it) or ok."""
    if limit <= 0 or to_date >= limit:
        return "over"
    if to_date >= limit * NEAR_BUDGET:
        return "near"
    if forecast > limit:
        return "heading-over"
    return "ok"


@dataclass(frozen=True)
class HeatCell:
    hour: datetime
    percent: float | None  # used GE-hours of the card in the hour, as a % of one card-hour
    level: int  # 0 idle, 1 up to 25 %, 2 up to 50 %, 3 up to 75 %, 4 above; -1 unknown
    state: str  # "measured", "incomplete" (a gap in the samples), "unmetered" (no figures at all)


def heat_cell(*, hour: datetime, used: Fraction | None, metered: bool, complete: bool = True) -> HeatCell:
    if not metered:
        return HeatCell(hour=hour, percent=None, level=-1, state="unmetered")
    share = used or Fraction(0)
    percent = float(share * 100)
    level = 0 if share <= 0 else min(4, math.ceil(share * 4))
    return HeatCell(hour=hour, percent=percent, level=level, state="measured" if complete else "incomplete")
