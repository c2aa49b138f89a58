"""The sync's heartbeats, one per (cluster, kind): the watch loop beats each kind whose batch brought
no error, so a sync thread that died (or a reader that keeps failing) reads as stale within a minute
on the inventory page, the overview and /readyz, however green its last SyncState was."""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.urls import reverse

from gpuplatform.health.heartbeats import BEAT_MIN_SECONDS, beat, loop_health
from inventory.models import Cluster, sync_heartbeat_name
from inventory.models.clusters import SYNC_HEARTBEAT_PREFIX

if TYPE_CHECKING:
    from inventory.sync.runner import Queued

# The watch loop applies a batch every quarter second: it is stale when silent for a minute.
SYNC_STALE_AFTER_SECONDS = 60.0
_next_beat: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()


def beat_sync(*, cluster: Cluster, kinds: Iterable[str], now: datetime | None = None) -> None:
    """Record that these kinds of the cluster's sync just succeeded (one upsert each, in one
    transaction: on the demo's SQLite, one wait for the write lock rather than five)."""
    url = reverse("inventory")
    with transaction.atomic():
        _beat_kinds(cluster=cluster, kinds=kinds, url=url, now=now)


def _beat_kinds(*, cluster: Cluster, kinds: Iterable[str], url: str, now: datetime | None) -> None:
    for kind in kinds:
        beat(
            sync_heartbeat_name(cluster.pk, kind),
            label=f"Inventory sync of {cluster.name}: {kind}",
            every_seconds=SYNC_STALE_AFTER_SECONDS / 3,
            stale_after_seconds=SYNC_STALE_AFTER_SECONDS,
            url=url,
            now=now,
        )


def beat_after_batch(syncer: Any, batch: list[Queued]) -> None:
    """Called by the watch loop after each batch: beats every kind without an error in it, at most
    once per BEAT_MIN_SECONDS per syncer (no query at all in between)."""
    if time.monotonic() < _next_beat.get(syncer, 0.0):
        return
    failing = {queued.kind for queued in batch if isinstance(queued.item, Exception)}
    beat_sync(cluster=syncer.cluster, kinds=[kind for kind in syncer.kinds if kind not in failing])
    _next_beat[syncer] = time.monotonic() + BEAT_MIN_SECONDS


def sync_heartbeats(*, now: datetime | None = None) -> dict[tuple[str, str], Any]:
    """(cluster id, kind) -> its LoopHealth, for every sync that ever beat; one query."""
    found = {}
    for loop in loop_health(prefix=SYNC_HEARTBEAT_PREFIX, now=now):
        _, cluster_id, kind = loop.name.split(":", 2)
        found[(cluster_id, kind)] = loop
    return found


def judge_sync_states(clusters: list[Cluster], *, now: datetime | None = None) -> list[Cluster]:
    """Set on each prefetched SyncState what is true now: ``status`` "stale" (its loop has not beaten
    within the threshold, or never did), "error" (the last attempt failed) or "in sync", and
    ``last_beat`` (the last success of its loop, or None). One query for every cluster."""
    loops = sync_heartbeats(now=now)
    for cluster in clusters:
        for state in cluster.sync_states.all():
            loop = loops.get((str(cluster.pk), state.kind))
            state.last_beat = loop.last_success if loop else None  # type: ignore[attr-defined]
            if loop is None or loop.stale:
                state.status = "stale"  # type: ignore[attr-defined]
            elif not state.healthy:
                state.status = "error"  # type: ignore[attr-defined]
            else:
                state.status = "in sync"  # type: ignore[attr-defined]
    return clusters
