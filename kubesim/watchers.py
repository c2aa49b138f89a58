"""Watch subscriptions: the store appends committed events; the serving thread filters and encodes them.

Filtering happens on the consumer side so that a write under the store lock only appends to a deque per
watcher. Selector semantics follow the apiserver's cacheWatcher: an object that starts matching is
ADDED, one that stops matching is DELETED (carrying its previous content at the new resourceVersion).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubesim.selectors import Matcher


@dataclass(frozen=True, slots=True)
class Entry:
    """A committed object: the dict is never mutated after commit, `raw` is its compact JSON."""

    obj: dict[str, Any]
    raw: bytes
    rv: int


@dataclass(frozen=True, slots=True)
class Event:
    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    resource: str
    namespace: str
    new: Entry  # for DELETED: the last state, at the deletion's resourceVersion
    old: Entry | None


def encode_event(event_type: str, raw: bytes) -> bytes:
    return b'{"type":"' + event_type.encode() + b'","object":' + raw + b"}\n"


def with_resource_version(obj: dict[str, Any], rv: int) -> bytes:
    copy = dict(obj)
    copy["metadata"] = dict(obj.get("metadata", {}), resourceVersion=str(rv))
    return json.dumps(copy, separators=(",", ":")).encode()


Converter = Callable[[Entry], bytes]


class WatchStream:
    """One watcher's queue of events. `next_batch` blocks until events arrive, the stream is closed, or
    the timeout passes; it returns already-encoded lines."""

    def __init__(
        self, resource: str, namespace: str | None, matcher: Matcher | None, convert: Converter | None
    ):
        self.resource = resource
        self.namespace = namespace
        self.matcher = matcher
        self.convert = convert
        self._queue: deque[Event] = deque()
        self._cond = threading.Condition(threading.Lock())
        self.closed = False
        self.last_rv = 0  # highest resourceVersion handed to the consumer

    # Called by the store with its lock held: must stay cheap.
    def offer(self, event: Event) -> None:
        if self.namespace is not None and event.namespace != self.namespace:
            return
        with self._cond:
            self._queue.append(event)
            self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    def is_idle(self) -> bool:
        with self._cond:
            return not self._queue

    def _raw(self, entry: Entry) -> bytes:
        return self.convert(entry) if self.convert else entry.raw

    def encode(self, event: Event) -> bytes | None:
        match = self.matcher
        if match is None:
            return encode_event(event.type, self._raw(event.new))
        new_ok = match(event.new.obj)
        old_ok = event.old is not None and match(event.old.obj)
        if event.type == "ADDED":
            return encode_event("ADDED", self._raw(event.new)) if new_ok else None
        if event.type == "DELETED":
            return encode_event("DELETED", self._raw(event.new)) if new_ok or old_ok else None
        if new_ok and old_ok:
            return encode_event("MODIFIED", self._raw(event.new))
        if new_ok:
            return encode_event("ADDED", self._raw(event.new))
        if old_ok and event.old is not None:
            old = Entry(event.old.obj, with_resource_version(event.old.obj, event.rv), event.rv)
            return encode_event("DELETED", self._raw(old))
        return None

    def next_batch(self, timeout: float, max_events: int = 2000) -> list[bytes] | None:
        """Encoded lines for the next events; [] on timeout; None once closed and drained."""
        with self._cond:
            if not self._queue and not self.closed:
                self._cond.wait(timeout)
            if not self._queue:
                return None if self.closed else []
            n = min(len(self._queue), max_events)
            events = [self._queue.popleft() for _ in range(n)]
        self.last_rv = events[-1].rv
        lines = []
        for event in events:
            line = self.encode(event)
            if line is not None:
                lines.append(line)
        return lines
