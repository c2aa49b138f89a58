"""The dashboards' pure series (metering/dashboards/series.py), each figure worked by hand."""

from __future__ import annotations

from datetime import UTC, date, datetime
from fractions import Fraction

from metering.dashboards.series import (
    Interval,
    budget_state,
    daily_waits,
    heat_cell,
    hourly_holding,
    month_end_forecast,
    nearest_rank,
)


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2025, 3, day, hour, minute, tzinfo=UTC)


def test_percentiles_are_by_nearest_rank_never_interpolated():
    # 4 waits: the median is rank ceil(0.5 * 4) = 2 -> 120 s; P95 is rank ceil(0.95 * 4) = 4 -> 600 s
    assert nearest_rank([600, 60, 180, 120], Fraction(1, 2)) == 120
    assert nearest_rank([600, 60, 180, 120], Fraction(95, 100)) == 600
    # 1..20: the median is rank 10 -> 10; P95 is rank ceil(19.0) = 19 -> 19 (not 19.05)
    assert nearest_rank(list(range(1, 21)), Fraction(1, 2)) == 10
    assert nearest_rank(list(range(1, 21)), Fraction(95, 100)) == 19
    assert nearest_rank([], Fraction(1, 2)) is None


def test_daily_waits_group_by_admission_day_and_leave_quiet_days_empty():
    waits = [(at(10, 10), 600.0), (at(10, 10, 15), 300.0), (at(10, 11, 2), 120.0), (at(9, 9), 3600.0)]
    days = daily_waits(waits=waits, days=[date(2025, 3, 8), date(2025, 3, 9), date(2025, 3, 10)])
    # the 8th: nothing admitted; the 9th: one wait of an hour; the 10th: 120, 300, 600 -> median rank
    # 2 = 300 s, P95 rank ceil(2.85) = 3 = 600 s
    assert [(d.admitted, d.median_seconds, d.p95_seconds) for d in days] == [
        (0, None, None),
        (1, 3600.0, 3600.0),
        (3, 300.0, 600.0),
    ]


def test_held_and_borrowed_are_integrals_over_the_hour():
    # nominal 1 GE. A holds 1 GE 09:30-10:30, B holds 1 GE from 10:15 on, C holds 2 GE 11:02-12:00.
    intervals = [
        Interval(start=at(10, 9, 30), end=at(10, 10, 30), ge=Fraction(1)),
        Interval(start=at(10, 10, 15), end=None, ge=Fraction(1)),
        Interval(start=at(10, 11, 2), end=at(10, 12), ge=Fraction(2)),
    ]
    rows = hourly_holding(
        intervals=intervals,
        nominal=Fraction(1),
        hours=[at(10, 10), at(10, 11), at(10, 12)],
        now=at(10, 12, 30),
    )
    # 10:00: 1 GE for 15 min, 2 GE for 15 min, 1 GE for 30 min -> held 1/4 + 2/4 + 1/2 = 5/4;
    #        borrowed (above 1 GE) only in the 15 min at 2 GE -> 1 * 1/4 = 1/4
    # 11:00: B's 1 GE for 2 min, then B + C = 3 GE for 58 min -> held 2/60 + 174/60 = 176/60;
    #        borrowed 2 GE for 58 min -> 116/60
    # 12:00 (now 12:30): B alone for the 30 min so far -> held 1/2 of a GE-hour, nothing borrowed
    assert [(r.held, r.borrowed) for r in rows] == [
        (Fraction(5, 4), Fraction(1, 4)),
        (Fraction(176, 60), Fraction(116, 60)),
        (Fraction(1, 2), Fraction(0)),
    ]


def test_the_month_end_forecast_is_the_run_rate_so_far():
    # March has 31 days; at 11 March 00:00, 10 days have passed. 100 GE-hours burned in 10 days runs
    # at 10 a day, so 310 by the end of the month.
    forecast = month_end_forecast(
        to_date=Fraction(100), month_start=at(1, 0), month_end=datetime(2025, 4, 1, tzinfo=UTC), now=at(11, 0)
    )
    assert forecast == 310
    # at the month's first instant nothing has run yet: the forecast is what is burned (nothing)
    assert (
        month_end_forecast(
            to_date=Fraction(0),
            month_start=at(1, 0),
            month_end=datetime(2025, 4, 1, tzinfo=UTC),
            now=at(1, 0),
        )
        == 0
    )


def test_budget_states():
    # burned 100, forecast 310: over a 100 budget, near a 120 one (100 >= 96 = 80 %), heading over a
    # 300 one (100 < 240 but 310 > 300), on track against 400
    assert budget_state(limit=Fraction(100), to_date=Fraction(100), forecast=Fraction(310)) == "over"
    assert budget_state(limit=Fraction(120), to_date=Fraction(100), forecast=Fraction(310)) == "near"
    assert budget_state(limit=Fraction(300), to_date=Fraction(100), forecast=Fraction(310)) == "heading-over"
    assert budget_state(limit=Fraction(400), to_date=Fraction(100), forecast=Fraction(310)) == "ok"


def test_heat_cells_print_the_percentage_and_step_by_quarter():
    def cell(used, metered=True, complete=True):
        found = heat_cell(hour=at(10, 12), used=used, metered=metered, complete=complete)
        return found.percent, found.level, found.state

    # 0.75 GE-hours on one card in an hour: 75 %, the third step (50-75 %)
    assert cell(Fraction(3, 4)) == (75.0, 3, "measured")
    # 0.26: just over a quarter -> level ceil(1.04) = 2
    assert cell(Fraction(26, 100)) == (26.0, 2, "measured")
    # oversubscribed (time-slicing, 1.2 card-hours of use): 120 %, the top level
    assert cell(Fraction(6, 5)) == (120.0, 4, "measured")
    # a metered hour with no use of this card is idle (0 %); an unmetered one is unknown, never 0
    assert cell(None) == (0.0, 0, "measured")
    assert cell(None, metered=False) == (None, -1, "unmetered")
    assert cell(Fraction(1, 2), complete=False) == (50.0, 2, "incomplete")
