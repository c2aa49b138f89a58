"""The one backoff: doubling from a base, capped, jittered within the asked bounds."""

from __future__ import annotations

import random

from gpuplatform.backoff import backoff_seconds


def test_without_jitter_it_doubles_from_the_base_until_the_cap():
    delays = [backoff_seconds(n, base=0.5, cap=30) for n in range(9)]
    assert delays == [0.5, 1, 2, 4, 8, 16, 30, 30, 30]


def test_a_negative_count_waits_the_base_and_a_huge_one_the_cap():
    assert backoff_seconds(-3, base=60, cap=3600) == 60
    assert backoff_seconds(10_000, base=60, cap=3600) == 3600


def test_jitter_scales_each_step_within_its_bounds_and_spreads_the_waits():
    rng = random.Random(1)
    waits = [backoff_seconds(3, base=0.5, cap=30, jitter=(0.5, 1.5), rng=rng) for _ in range(200)]
    assert all(2.0 <= w <= 6.0 for w in waits)  # 0.5 * 2**3 = 4, times [0.5, 1.5]
    assert len(set(waits)) == 200
    capped = [backoff_seconds(20, base=0.5, cap=30, jitter=(0.5, 1.0), rng=rng) for _ in range(200)]
    assert all(15.0 <= w <= 30.0 for w in capped)


def test_the_same_seed_gives_the_same_waits():
    def run(seed: int) -> list[float]:
        rng = random.Random(seed)
        return [backoff_seconds(n, base=1, cap=8, jitter=(0.5, 1.5), rng=rng) for n in range(6)]

    assert run(4) == run(4)
