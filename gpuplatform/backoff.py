"""How long to wait before trying again: exponential, capped, optionally jittered. Pure (no Django),
so the node agent and the domain modules use it too.

Jitter spreads clients that failed together (an API server restart fails every watcher at once) so
they do not come back together; a schedule stored in the database (a node's next attempt) needs none.
"""

from __future__ import annotations

import random

# 2**64 times any sane base is past any cap; the bound keeps the float finite for absurd attempts.
_MAX_DOUBLINGS = 64


def backoff_seconds(
    doublings: int,
    *,
    base: float,
    cap: float,
    jitter: tuple[float, float] = (1.0, 1.0),
    rng: random.Random | None = None,
) -> float:
    """``base`` doubled ``doublings`` times (0: ``base``), at most ``cap``, times a factor drawn
    uniformly from ``jitter`` (low, high); ``(1.0, 1.0)``, the default, draws nothing."""
    step = min(cap, base * 2.0 ** max(0, min(doublings, _MAX_DOUBLINGS)))
    low, high = jitter
    if low == high:
        return step * low
    return step * (rng or random).uniform(low, high)
