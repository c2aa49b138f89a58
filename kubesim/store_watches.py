"""The watch half of kubesim's store: each resource's event history, its watch streams, compaction.

`Store` commits under its one lock and hands each event to `_publish`; a watch replays the history
after its resourceVersion (410 once that is older than the history window) and then gets every event
in commit order, as the API server's watch cache serves them.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubesim import errors
from kubesim.registry import ResourceInfo
from kubesim.selectors import Matcher
from kubesim.watchers import Converter, Entry, Event, WatchStream

Key = tuple[str, str]  # (namespace or "", name)
Listener = Callable[[str, str, dict[str, Any]], None]  # (event type, resource, object)


@dataclass(slots=True)
class Table:
    info: ResourceInfo
    objects: dict[Key, Entry] = field(default_factory=dict)
    history: deque[Event] = field(default_factory=deque)
    compacted_rv: int = 0  # watches from a resourceVersion below this get 410
    watchers: set[WatchStream] = field(default_factory=set)
    sorted_keys: list[Key] | None = None


class WatchHistory:
    """What `Store` keeps for watches; the state is the store's, guarded by its lock."""

    history_window: int
    _lock: threading.RLock
    _rv: int
    _tables: dict[str, Table]
    _listeners: list[Listener]

    def _publish(self, table: Table, event: Event) -> None:
        table.history.append(event)
        if len(table.history) > self.history_window:
            table.compacted_rv = table.history.popleft().rv
        for watcher in table.watchers:
            watcher.offer(event)
        if self._listeners:
            obj = json.loads(event.new.raw)
            for fn in self._listeners:
                fn(event.type, event.resource, obj)

    # ------------------------------------------------------------------------------------- watches

    def watch(
        self,
        resource: str,
        namespace: str | None,
        since: int | None,
        matcher: Matcher | None,
        convert: Converter | None = None,
    ) -> WatchStream:
        """Subscribe. since=None: synthetic ADDED for current state first; else replay history after
        `since` (410 Expired when it is older than the history window)."""
        table = self._tables[resource]
        stream = WatchStream(resource, namespace, matcher, convert)
        with self._lock:
            if since is None:
                current = [e for k, e in sorted(table.objects.items()) if not namespace or k[0] == namespace]
                for entry in current:
                    meta = entry.obj["metadata"]
                    stream.offer(Event(entry.rv, "ADDED", resource, meta.get("namespace", ""), entry, None))
            else:
                if since < table.compacted_rv:
                    raise errors.too_old_resource_version(since, table.compacted_rv + 1)
                for event in table.history:
                    if event.rv > since:
                        stream.offer(event)
            table.watchers.add(stream)
        return stream

    def unwatch(self, stream: WatchStream) -> None:
        with self._lock:
            self._tables[stream.resource].watchers.discard(stream)
        stream.close()

    def close_watches(self, resource: str | None = None) -> int:
        """End watch streams (all, or one resource's): clients see the stream end and re-watch."""
        with self._lock:
            tables = [self._tables[resource]] if resource else list(self._tables.values())
            streams = [w for t in tables for w in t.watchers]
            for t in tables:
                t.watchers.clear()
        for stream in streams:
            stream.close()
        return len(streams)

    def compact(self, resource: str | None = None) -> int:
        """Drop all watch history: a watch from any resourceVersion before now gets 410."""
        with self._lock:
            for table in [self._tables[resource]] if resource else self._tables.values():
                table.history.clear()
                table.compacted_rv = self._rv
            return self._rv

    def last_change(self, resource: str) -> int:
        """The resourceVersion of the resource's newest event still in history (0 when none)."""
        with self._lock:
            history = self._tables[resource].history
            return history[-1].rv if history else 0

    def watcher_count(self, resource: str) -> int:
        """Open watch streams on a resource (a test waits for a client's watch to be open)."""
        with self._lock:
            return len(self._tables[resource].watchers)

    def oldest_watchable(self, resource: str) -> int:
        return self._tables[resource].compacted_rv
