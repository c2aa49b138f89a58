"""Serving one watch request: initial events or history replay, live events, bookmarks, timeout, faults.

Lines are newline-delimited JSON watch events. Bookmarks (only when the client sent
allowWatchBookmarks=true) carry just kind, apiVersion and metadata.resourceVersion, and are sent when
the watcher has received every event up to that resourceVersion. A watch that cannot start from the
asked resourceVersion answers 200 with one ERROR event holding a 410 Status, as the real server does.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

from kubesim.errors import ApiError, too_old_resource_version
from kubesim.registry import ResourceInfo
from kubesim.store import Store
from kubesim.watchers import WatchStream

DEFAULT_WATCH_TIMEOUT = 1800.0  # the real server's minRequestTimeout; it randomises up to twice that
_IDLE_TICK = 0.5  # how often an idle stream checks for a departed client


def error_event(err: ApiError) -> bytes:
    return json.dumps({"type": "ERROR", "object": err.to_status()}, separators=(",", ":")).encode() + b"\n"


def bookmark_event(info: ResourceInfo, version: str, rv: int) -> bytes:
    obj = {
        "kind": info.kind,
        "apiVersion": info.api_version_for(version),
        "metadata": {"resourceVersion": str(rv)},
    }
    return json.dumps({"type": "BOOKMARK", "object": obj}, separators=(",", ":")).encode() + b"\n"


def serve_watch(
    store: Store,
    info: ResourceInfo,
    version: str,
    stream: WatchStream,
    *,
    timeout: float,
    bookmarks: bool,
    bookmark_interval: float,
    cut_after: int | None,
    client_gone: object,
) -> Iterator[bytes | None]:
    """Yield chunks until timeout, client departure or a cut; always unsubscribes."""
    deadline = time.monotonic() + timeout
    next_bookmark = time.monotonic() + bookmark_interval
    sent = 0
    gone = client_gone if callable(client_gone) else (lambda: False)
    try:
        while True:
            now = time.monotonic()
            if now >= deadline:
                return
            wait = min(deadline - now, _IDLE_TICK, max(next_bookmark - now, 0.0) if bookmarks else _IDLE_TICK)
            lines = stream.next_batch(wait)
            if lines is None:
                return  # closed by the server (close_watches): the client sees a clean end of stream
            if cut_after is not None and sent + len(lines) >= cut_after:
                keep = max(cut_after - sent, 0)
                if keep:
                    yield b"".join(lines[:keep])
                yield None
                return
            if lines:
                sent += len(lines)
                yield b"".join(lines)
            elif gone():
                return
            if bookmarks and time.monotonic() >= next_bookmark:
                next_bookmark = time.monotonic() + bookmark_interval
                with store.lock:
                    idle = stream.is_idle()
                    rv = store.resource_version
                if idle:
                    yield bookmark_event(info, version, rv)
    finally:
        store.unwatch(stream)


def too_old(since: int, store: Store, resource: str) -> bytes:
    return error_event(too_old_resource_version(since, store.oldest_watchable(resource) + 1))
