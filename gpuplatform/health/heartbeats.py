"""Heartbeats: each background loop says when it last succeeded, and readers judge staleness from
that time. Lower apps and higher ones alike call ``beat``; the core knows no loop by name."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from gpuplatform.health.models import Heartbeat

# A loop that beats more often than this writes nothing in between: a watch applies a batch every
# quarter second, and a heartbeat is worth one row write every few seconds at most.
BEAT_MIN_SECONDS = 5.0
STALE_AFTER_INTERVALS = 3


def beat(
    name: str,
    *,
    label: str,
    every_seconds: float,
    stale_after_seconds: float | None = None,
    url: str = "",
    now: datetime | None = None,
) -> None:
    """Record that loop ``name`` just succeeded (stale after ``stale_after_seconds``, by default three
    of its intervals). One conditional UPDATE that writes nothing when the last beat is under
    BEAT_MIN_SECONDS old; an INSERT the first time. Takes no lock beyond the row's; idempotent."""
    now = now or timezone.now()
    stale_after = (
        STALE_AFTER_INTERVALS * every_seconds if stale_after_seconds is None else stale_after_seconds
    )
    fields = {"label": label[:200], "url": url[:300], "beat_at": now, "stale_after_seconds": stale_after}
    due = Heartbeat.objects.filter(name=name, beat_at__lt=now - timedelta(seconds=BEAT_MIN_SECONDS))
    if due.update(**fields):
        return
    # No row yet, or a fresh one: a conflict means another process (or a beat just now) has it.
    Heartbeat.objects.bulk_create([Heartbeat(name=name, **fields)], ignore_conflicts=True)


def forget(*, prefix: str) -> int:
    """Drop the heartbeats of loops that no longer exist (a removed cluster's sync), so they do not
    read as stale forever. Returns how many."""
    deleted, _ = Heartbeat.objects.filter(name__startswith=prefix).delete()
    return deleted


@dataclass(frozen=True)
class LoopHealth:
    name: str
    label: str
    url: str
    last_success: datetime
    stale_after_seconds: float
    stale: bool


def loop_health(*, prefix: str = "", now: datetime | None = None) -> list[LoopHealth]:
    """Every loop that ever beat (under ``prefix``), judged at ``now``; one query."""
    now = now or timezone.now()
    rows = Heartbeat.objects.filter(name__startswith=prefix) if prefix else Heartbeat.objects.all()
    return [
        LoopHealth(
            name=row.name,
            label=row.label,
            url=row.url,
            last_success=row.beat_at,
            stale_after_seconds=row.stale_after_seconds,
            stale=row.is_stale(now),
        )
        for row in rows.order_by("name")
    ]


def stale_loops(*, now: datetime | None = None) -> list[LoopHealth]:
    return [loop for loop in loop_health(now=now) if loop.stale]
