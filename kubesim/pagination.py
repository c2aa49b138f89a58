"""Paginated lists: `limit`/`continue` served from a snapshot taken by the first page.

A real server reads every page at the first page's resourceVersion (an etcd snapshot), so a paginated
list shows each object exactly once, as it was at that revision. kubesim keeps the first page's list of
committed entries (cheap references) under a random id; the token carries it. Tokens expire after
`ttl` seconds (the stand-in for etcd compaction) and then answer 410 Expired.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
import threading
import time
from dataclasses import dataclass

from kubesim.errors import CONTINUE_EXPIRED, bad_request, gone
from kubesim.watchers import Entry


@dataclass(slots=True)
class Snapshot:
    entries: list[Entry]
    rv: int
    scope: str  # resource + namespace + selectors: a token is only valid for the same query
    created: float


@dataclass(frozen=True, slots=True)
class Page:
    entries: list[Entry]
    rv: int
    continue_token: str
    remaining: int


class Paginator:
    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._snapshots: dict[str, Snapshot] = {}
        self._lock = threading.Lock()

    def first_page(self, entries: list[Entry], rv: int, scope: str, limit: int) -> Page:
        if limit <= 0 or len(entries) <= limit:
            return Page(entries, rv, "", 0)
        snap_id = secrets.token_hex(8)
        with self._lock:
            self._expire_locked()
            self._snapshots[snap_id] = Snapshot(entries, rv, scope, time.monotonic())
        return self._page(snap_id, entries, rv, 0, limit)

    def next_page(self, token: str, scope: str, limit: int) -> Page:
        snap_id, _rv, pos = _decode(token)
        with self._lock:
            self._expire_locked()
            snap = self._snapshots.get(snap_id)
        if snap is None:
            raise gone(CONTINUE_EXPIRED)
        if snap.scope != scope:
            raise bad_request("continue key is not valid: the continue token does not match the request")
        if limit <= 0:
            limit = len(snap.entries)
        page = self._page(snap_id, snap.entries, snap.rv, pos, limit)
        if not page.continue_token:
            with self._lock:
                self._snapshots.pop(snap_id, None)
        return page

    def expire_all(self) -> int:
        """Forget every snapshot: every outstanding continue token now answers 410."""
        with self._lock:
            n = len(self._snapshots)
            self._snapshots.clear()
        return n

    def _expire_locked(self) -> None:
        cutoff = time.monotonic() - self.ttl
        for key in [k for k, s in self._snapshots.items() if s.created < cutoff]:
            del self._snapshots[key]

    @staticmethod
    def _page(snap_id: str, entries: list[Entry], rv: int, pos: int, limit: int) -> Page:
        end = pos + limit
        chunk = entries[pos:end]
        if end >= len(entries):
            return Page(chunk, rv, "", 0)
        last = chunk[-1].obj["metadata"]
        start = (
            f"{last.get('namespace', '')}/{last['name']}\x00"
            if last.get("namespace")
            else last["name"] + "\x00"
        )
        return Page(chunk, rv, _encode(snap_id, rv, start, end), len(entries) - end)


def _encode(snap_id: str, rv: int, start: str, pos: int) -> str:
    # The real token is base64(JSON{"v","rv","start"}); kubesim adds its snapshot id and position.
    body = {"v": "meta.k8s.io/v1", "rv": rv, "start": start, "sid": snap_id, "pos": pos}
    return base64.urlsafe_b64encode(json.dumps(body, separators=(",", ":")).encode()).decode().rstrip("=")


def _decode(token: str) -> tuple[str, int, int]:
    try:
        padded = token + "=" * (-len(token) % 4)
        body = json.loads(base64.urlsafe_b64decode(padded))
        return str(body["sid"]), int(body["rv"]), int(body["pos"])
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise bad_request(f"continue key is not valid: {exc}") from exc
