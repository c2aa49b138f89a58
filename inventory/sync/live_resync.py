"""A periodic resync that lists every kind while the watches keep running.

A list is a snapshot as of its first page; the watch of the same kind goes on applying what changes
after it, between the list's pages. The two meet on the objects the watch touched while the kind was
being listed: the watch holds their newer state (or will deliver it: a watch is complete and ordered
from its resourceVersion), so

- a list entry for an object the watch touched since the kind's list began is skipped (a deleted
  pod's stale entry would otherwise reopen its interval, a deleted claim's re-create its row);
- a list entry newer than what the watch has delivered so far is skipped too: its event is on the
  way, and applying it from the list would count the watch's change as the resync's drift;
- ``finish_list`` treats the touched keys as seen, so an object the watch created during the list is
  not closed as vanished, nor one it deleted closed twice.

Keys are ``handlers.object_key``: what ``ListState`` and ``finish_list`` compare (uids for holders
and Workloads, names for nodes, slices, classes and rules).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from inventory.domain.raw_fields import dig
from inventory.sync.handlers import object_key


@dataclass
class LiveList:
    """The kind a resync is listing while its watch runs, and what the watch applied meanwhile."""

    kind: str
    # Whether its watch is alive and caught up to a known resourceVersion: only then can an entry
    # newer than the watch be left to it (a watch that answered 410 delivers nothing more).
    watched: bool
    touched: set[str] = field(default_factory=set)

    def note_applied(self, kind: str, objects: Iterable[dict[str, Any]]) -> None:
        """Called by the watch's batch for every object it applied (upserted or deleted)."""
        if kind == self.kind:
            self.touched.update(object_key(kind, obj) for obj in objects)


def _version(value: Any) -> int | None:
    """A resourceVersion as a number (etcd's revision, kubesim's counter); None when it is not one:
    then nothing is taken to be newer than the watch, and the touched keys alone decide."""
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def entries_to_apply(
    live: LiveList, items: list[dict[str, Any]], *, watch_version: str
) -> list[dict[str, Any]]:
    """The entries of one list page that the list may still apply: neither touched by the watch since
    the list began, nor newer than what the watch has delivered (it will deliver them)."""
    delivered = _version(watch_version) if live.watched else None
    kept = []
    for obj in items:
        if object_key(live.kind, obj) in live.touched:
            continue
        if delivered is not None:
            own = _version(dig(obj, "metadata", "resourceVersion"))
            if own is not None and own > delivered:
                continue
        kept.append(obj)
    return kept
