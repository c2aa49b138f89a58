"""Burn rates and error budgets worked by hand (metering/slos/burn.py, pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from metering.slos.burn import Sample, budget_remaining, burn_rate, firing

END = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
BUCKET = timedelta(minutes=5)


def buckets(goods: list[int], *, total: int = 10, end: datetime = END) -> list[Sample]:
    """One 5-minute sample per entry, the last ending at ``end``."""
    start = end - BUCKET * len(goods)
    return [
        Sample(start + BUCKET * i, start + BUCKET * (i + 1), Decimal(g), Decimal(total))
        for i, g in enumerate(goods)
    ]


def test_an_hour_burning_at_twice_the_budget():
    # 12 buckets of 10 events, 2 bad each: 24 / 120 = 0.2 errors against a 0.9 objective's 0.1 → 2x
    samples = buckets([8] * 12)
    assert burn_rate(samples, objective=Decimal("0.9"), end=END, length=timedelta(hours=1)) == 2


def test_fast_burn_needs_the_hour_and_the_last_five_minutes():
    objective = Decimal("0.99")  # 1% budget: 14.4x is 14.4% errors
    # 11 clean buckets, then one with 10 of 10 bad: hour 10/120 = 8.33% → 8.33x; 5 min: 100% → 100x
    spike = buckets([10] * 11 + [0])
    assert burn_rate(spike, objective=objective, end=END, length=timedelta(hours=1)) == Decimal(
        10
    ) / 120 / Decimal("0.01")
    assert "fast_burn" not in firing(spike, objective=objective, end=END)
    # two bad buckets in the hour: 20/120 = 16.7% → 16.7x over the hour, and the last 5 min 100x
    assert set(firing(buckets([10] * 10 + [0, 0]), objective=objective, end=END)) == {
        "fast_burn",
        "slow_burn",
    }
    # the same hour, but the last bucket clean: the fast rule's 5 minutes are clean, so it stops; the
    # slow rule's 30 minutes still hold the 20 errors (20/60 = 33x) and its 6 hours 20/120 = 16.7x
    fired = firing(buckets([10] * 9 + [0, 0, 10]), objective=objective, end=END)
    assert set(fired) == {"slow_burn"}
    assert fired["slow_burn"] == (Decimal(20) / 120 / Decimal("0.01"), Decimal(20) / 60 / Decimal("0.01"))


def test_budget_left_and_an_empty_window_has_no_rate():
    # a 1-day window of 0.99: 288 buckets of 10 = 2,880 events, budget 28.8 errors; 7.2 spent → 75% left
    samples = buckets([10] * 287 + [10 - 7], total=10)
    samples[-1] = Sample(samples[-1].start, samples[-1].end, Decimal("2.8"), Decimal(10))
    left = budget_remaining(samples, objective=Decimal("0.99"), end=END, length=timedelta(days=1))
    assert left == Decimal("0.75")
    assert burn_rate([], objective=Decimal("0.99"), end=END, length=timedelta(hours=1)) is None
    assert (
        budget_remaining(buckets([0], total=0), objective=Decimal("0.99"), end=END, length=timedelta(days=1))
        is None
    )
