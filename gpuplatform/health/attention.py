"""The overview's item for stale loops: platform roles are told which loops stopped succeeding, one
item per place to look (the inventory page for its syncs, the SLO page for evaluation...). One query."""

from __future__ import annotations

from typing import Any

from django.utils.text import slugify

from gpuplatform.health.heartbeats import LoopHealth, stale_loops
from gpuplatform.ui.attention import Attention


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def stale_loops_attention(user: Any) -> list[Attention]:
    if not getattr(user, "sees_all_tenants", False):
        return []
    by_url: dict[str, list[LoopHealth]] = {}
    for loop in stale_loops():
        by_url.setdefault(loop.url or "/readyz", []).append(loop)
    items = []
    for url, loops in sorted(by_url.items()):
        oldest = min(loop.last_success for loop in loops)
        names = ", ".join(loop.label for loop in loops[:3]) + (" …" if len(loops) > 3 else "")
        items.append(
            Attention(
                key="-".join(["loops-stale", *filter(None, (slugify(part) for part in url.split("/")))]),
                severity="critical",
                title=f"{_plural(len(loops), 'loop')} stale",
                detail=f"{names}: no success since {oldest:%Y-%m-%d %H:%M} UTC; what they keep true may "
                "no longer be",
                url=url,
                count=len(loops),
            )
        )
    return items
