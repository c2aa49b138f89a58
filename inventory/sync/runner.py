"""Drive one cluster's sync: cold list of every kind, then watches, re-lists on 410, periodic resyncs.

Readers (one thread per kind) only read the API server and queue events; a single writer applies
them in batches, kinds in dependency order (units before holders), each batch in one transaction.
One writer means no lock contention between kinds on PostgreSQL and no "database is locked" on the
demo's SQLite.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection, transaction
from django.db.models import F
from django.utils import timezone

from gpuplatform.backoff import backoff_seconds
from inventory import kube
from inventory.cluster_access import client_for
from inventory.models import Cluster, EnforcementBackend, SyncKind, SyncState
from inventory.sync.collector import no_full_collections
from inventory.sync.context import SyncContext, UnitRef
from inventory.sync.handlers import (
    ListState,
    apply_deletes,
    apply_upserts,
    close_vanished,
    finish_list,
    observe_page,
)
from inventory.sync.heartbeats import beat_after_batch
from inventory.sync.live_resync import (
    LiveList,
    device_parts,
    entries_to_apply,
    live_page_size,
    lookup_parts,
    stored_key_parts,
    vanished_parts,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

# Workloads last: they point at namespaces and queues, nothing points at them.
KIND_ORDER = [kind.value for kind in SyncKind if kind != SyncKind.WORKLOADS]


def kinds_for(cluster: Cluster) -> list[str]:
    """What a cluster's sync lists and watches: Kueue's Workloads only where Kueue enforces (a
    cluster without Kueue's CRDs would answer 404, and its sync identity holds no right to them)."""
    if cluster.enforcement_backend == EnforcementBackend.KUEUE:
        return [*KIND_ORDER, SyncKind.WORKLOADS.value]
    return list(KIND_ORDER)


BATCH_EVENTS = 1000
BATCH_SECONDS = 0.25
BATCH_LINGER_SECONDS = 0.05
BACKOFF_BASE, BACKOFF_CAP = 0.5, 30.0


def backoff_delay(attempt: int, *, retry_after: float | None = None) -> float:
    """Exponential backoff with full jitter in [0.5, 1.5) of the step, honouring Retry-After."""
    delay = backoff_seconds(attempt, base=BACKOFF_BASE, cap=BACKOFF_CAP, jitter=(0.5, 1.5))
    return max(delay, retry_after or 0.0)


@contextmanager
def _list_commits_without_flush() -> Iterator[None]:
    """A list's page commits without waiting for their WAL flush, as ``_page_commit_without_flush``
    makes them, set once for the list's pages instead of once a page: that ``SET LOCAL`` was a round
    trip of its own before each page, 4.5 % of the writer's samples in the 5,000-node cold sync (600
    pages), each waiting for PostgreSQL's process to be scheduled on a loaded machine. Put back
    before the list's last transaction (the SyncState row), which commits normally as before."""
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SET synchronous_commit TO OFF")
    try:
        yield
    finally:
        try:
            with connection.cursor() as cursor:
                cursor.execute("RESET synchronous_commit")
        except DatabaseError:  # a connection that broke takes its session's setting with it
            if connection.is_usable():
                raise


def _page_commit_without_flush() -> None:
    """Let this transaction's commit return before its WAL reaches the disk (PostgreSQL only): a
    watch batch applied during a resync (a list's pages have it from `_list_commits_without_flush`).

    Waiting for the flush was ~5% of a cold sync (hundreds of page commits). Nothing is at risk: the
    list's last transaction (the SyncState row) commits normally, and that flush covers every page
    written before it; a crash before then leaves the old SyncState, and every start re-lists.
    The watches' batches applied between a resync's parts commit the same way (dozens a second, each
    waiting ~10 ms for its flush): committed is what the event-to-row latency waits for, flushed is
    not, and what a crash could lose of them a start's cold list reads again."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")


_END = object()
IDLE_SECONDS = 0.02


def read_ahead(items: Iterator[T], *, name: str, idle: Callable[[], None] | None = None) -> Iterator[T]:
    """``items``, each read by a thread while the caller works on the one before.

    A list page's request, kubesim's or the API server's answer and its decoding then overlap the
    previous page's writes, where the sync process only waited for PostgreSQL. One page ahead, no
    more: the next is read only once the caller has taken the last (a page of 500 ResourceSlices is
    tens of MiB as objects; two ahead raised the 5,000-node sync's peak RSS from 363 to 532 MiB).
    What reading raises is raised here, in the caller's thread; a caller that stops early (a page
    failed to apply) stops the reader too. Pages are still applied in order by the one writer.
    ``idle``: called every IDLE_SECONDS while the caller waits for an item (a resync applies the
    watches' events then: the server can take seconds to answer a page of ResourceSlices)."""
    slot: queue.Queue[tuple[Any, BaseException | None]] = queue.Queue()
    taken = threading.Semaphore(1)  # the reader may read one item beyond what the caller holds
    stopped = threading.Event()

    def read() -> None:
        try:
            while True:
                while not taken.acquire(timeout=0.5):
                    if stopped.is_set():
                        return
                if stopped.is_set():
                    return
                item = next(items, _END)
                slot.put((item, None))
                if item is _END:
                    return
        except BaseException as exc:  # handed to the caller, raised there
            slot.put((_END, exc))

    thread = threading.Thread(target=read, name=name, daemon=True)
    thread.start()
    try:
        while True:
            try:
                item, error = slot.get(timeout=IDLE_SECONDS if idle is not None else None)
            except queue.Empty:
                if idle is not None:
                    idle()
                continue
            if error is not None:
                raise error
            if item is _END:
                return
            taken.release()
            yield item
    finally:
        stopped.set()  # the reader ends after the request it may be in (not joined: up to its timeout)


@dataclass(frozen=True)
class Relist:
    """Queued by a watch that answered 410 Gone, in place of an event: its kind must be listed again."""


@dataclass(frozen=True)
class Queued:
    """What a watch reader hands the writer: an event, a failure to show in the cluster's health, or
    a call to re-list. ``generation`` is the reader's: a re-list starts new readers, and what the old
    ones queued meanwhile is dropped."""

    kind: str
    generation: int
    item: kube.WatchEvent | kube.KubeError | Relist


@dataclass
class SyncReport:
    changes: dict[str, int] = field(default_factory=dict)
    objects: dict[str, int] = field(default_factory=dict)

    @property
    def drift(self) -> int:
        return sum(self.changes.values())


class ClusterSync:
    def __init__(self, cluster: Cluster, *, api: Any = None, page_size: int | None = None) -> None:
        self.cluster = cluster
        self.page_size = page_size or settings.INVENTORY_LIST_PAGE_SIZE
        self.api = api or client_for(cluster)
        self.ctx = SyncContext(cluster=cluster)
        self.versions: dict[str, str] = {}
        self.stop_event = threading.Event()
        self._queue: queue.Queue[Queued] = queue.Queue(maxsize=50_000)
        self.kinds = kinds_for(cluster)
        self._generation: dict[str, int] = dict.fromkeys(self.kinds, 0)
        self.timings: dict[str, float] = {}  # seconds of the last list per kind
        # During a periodic resync: the kind being listed while its watch runs, and the kinds whose
        # watch answered 410 and that still need a list (the resync's own, when it is still to come).
        self._live: LiveList | None = None
        self._relist_pending: set[str] = set()
        self._on_batch: Any = None

    # --- lists -----------------------------------------------------------------------------------
    def list_kind(self, kind: str, *, live: bool = False, on_page: Any = None) -> tuple[int, int]:
        """List one kind page by page, applying each page, then reconcile; (changes, objects).

        ``live``: the watches are running (a periodic resync): what they queued is applied between
        the pages, and the list leaves to the watch what it touched (see live_resync)."""
        state, changes, started = ListState(), 0, time.monotonic()
        # A resync keeps the cached units (see reset_lookups), and so does the Workloads' list, the last
        # of a Kueue cluster's: dropping them there made the watch's first batches after a cold sync
        # read every node's units again (a backlog of 5,000 pod events applied at half the rate).
        self.ctx.reset_lookups(units=not live and kind != SyncKind.WORKLOADS)
        if live:
            watched = kind not in self._relist_pending and bool(self.versions.get(kind))
            self._live = LiveList(kind=kind, watched=watched)
            self._prime_lookups(kind)
        version = ""
        size = live_page_size(kind, self.page_size) if live else self.page_size
        pages = kube.list_pages(self.api, kind=kind, page_size=size)
        try:
            with _list_commits_without_flush():
                for number, page in enumerate(
                    read_ahead(
                        pages,
                        name=f"inventory-list-{self.cluster.name}-{kind}",
                        idle=self.apply_queued if self._live is not None else None,
                    )
                ):
                    for items in self._page_parts(page.items):
                        if self._live is not None:
                            self.apply_queued()
                            items = entries_to_apply(
                                self._live, items, watch_version=self.versions.get(kind, "")
                            )
                            if not items:
                                continue  # all left to the watch
                        began = time.monotonic()
                        with transaction.atomic():
                            changes += apply_upserts(self.ctx, kind, items, listing=True)
                            self.ctx.flush_issues()
                        if self._live is not None:
                            self._live.part_took(len(items), time.monotonic() - began)
                    observe_page(kind, state, page.items)
                    version = page.resource_version
                    if on_page is not None:
                        on_page(kind, number)
            listed = len(state.seen)
            if self._live is not None:
                changes += self._finish_live_list(self._live, state)
        finally:
            self._live = None
        with transaction.atomic():
            if not live:
                changes += finish_list(self.ctx, kind, state)
            now = timezone.now()
            SyncState.objects.update_or_create(
                cluster=self.cluster,
                kind=kind,
                defaults={
                    "resource_version": self._version_after_list(kind, version, live=live),
                    "last_list_at": now,
                    "last_success_at": now,
                    "objects_seen": listed,
                    "lag_seconds": 0.0,
                },
            )
        if not live:
            self.versions[kind] = version
        elif kind in self._relist_pending:
            self._resume_watch_from_list(kind, version)
        self.timings[kind] = time.monotonic() - started
        return changes, listed

    def _prime_lookups(self, kind: str) -> None:
        """What a live list's first part would read whole, read in parts with the watches' events
        applied between them (see live_resync.lookup_parts)."""
        for name, parts in lookup_parts(self.ctx, kind):
            keys: set[str] = set()
            for part in parts:
                keys |= part
                self.apply_queued()
            self.ctx.prime_stored(name, keys)
        if kind == SyncKind.RESOURCE_CLAIMS and not self.ctx.devices_cached:
            devices: dict[tuple[str, str, str], UnitRef] = {}
            since = self.ctx.units_dropped
            for found in device_parts(self.ctx):
                devices |= found
                self.apply_queued()
            self.ctx.prime_devices(devices, read_since=since)

    def _finish_live_list(self, live: LiveList, state: ListState) -> int:
        """``finish_list`` for a list made while the watch ran, in parts with the watches' events
        applied between them (see live_resync): the stored keys read, then the vanished closed."""
        stored: set[str] = set()
        for keys in stored_key_parts(self.ctx, live.kind):
            stored |= keys
            self.apply_queued()
        state.seen |= live.touched  # the watch's to keep or close, not the list's
        changes = 0
        for gone in vanished_parts(live, stored - state.seen):
            with transaction.atomic():
                changes += close_vanished(self.ctx, live.kind, gone)
            self.apply_queued()
        return changes

    def _page_parts(self, items: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
        """A page whole, or (while the watches run) in parts of ``LiveList.part_size`` objects, so
        their events wait for one part, not one page: a page of 500 ResourceSlices takes over a
        second to apply."""
        if self._live is None:
            yield items
            return
        start = 0
        while start < len(items):
            size = self._live.part_size()  # asked part by part: the last part's time sizes the next
            yield items[start : start + size]
            start += size

    def _version_after_list(self, kind: str, listed: str, *, live: bool) -> str:
        """Where the kind's watch resumes: a running watch is ahead of the list's snapshot, so its
        place stays; a new watch (cold, or after a 410) starts from the list's."""
        if live and kind not in self._relist_pending:
            return self.versions.get(kind) or listed
        return listed

    def full_sync(
        self, *, record_drift: bool | None = None, live: bool = False, on_page: Any = None
    ) -> SyncReport:
        """List every kind in dependency order and reconcile. Idempotent: a second run changes nothing
        when the cluster did not change; what it does change is drift, recorded on the cluster.

        ``live``: the watches keep running (see ``resync``); ``on_page(kind, number)`` is called after
        each page is applied (tests step a resync with it)."""
        if record_drift is None:
            record_drift = self.cluster.last_full_resync_at is not None
        report = SyncReport()
        # Without full garbage collections (inventory/sync/collector.py): each walked the whole heap
        # every few pages; a resync's held the watches' events as long, and ends with no collection.
        with no_full_collections(collect=not live):
            for kind in self.kinds:
                report.changes[kind], report.objects[kind] = self._with_retries(
                    kind, lambda k=kind: self.list_kind(k, live=live, on_page=on_page)
                )
        updates: dict[str, Any] = {"last_full_resync_at": timezone.now()}
        if record_drift:
            updates.update(last_drift=report.drift, total_drift=self.cluster.total_drift + report.drift)
        Cluster.objects.filter(pk=self.cluster.pk).update(**updates)
        self.cluster.refresh_from_db()
        return report

    def _with_retries(self, kind: str, action: Any, attempts: int = 8) -> Any:
        for attempt in range(attempts):
            try:
                return action()
            except kube.KubeError as exc:
                self._record_error(kind, exc)
                if attempt == attempts - 1 or self.stop_event.is_set():
                    raise
                time.sleep(backoff_delay(attempt, retry_after=exc.retry_after))
        raise AssertionError("unreachable")

    def _record_error(self, kind: str, exc: Exception) -> None:
        record_sync_failure(cluster=self.cluster, error=exc, kinds=(kind,))

    # --- watches ---------------------------------------------------------------------------------
    def _reader(self, kind: str, generation: int, version: str) -> None:
        attempt = 0
        while not self.stop_event.is_set() and self._generation[kind] == generation:
            try:
                for event in kube.watch_events(
                    self.api, kind=kind, resource_version=version, timeout_seconds=60
                ):
                    if event.resource_version:
                        version = event.resource_version
                    self._queue.put(Queued(kind, generation, event))
                    attempt = 0
                    if self.stop_event.is_set() or self._generation[kind] != generation:
                        return
            except kube.Gone:
                self._queue.put(Queued(kind, generation, Relist()))
                return
            except kube.KubeError as exc:
                self._queue.put(Queued(kind, generation, exc))
                time.sleep(backoff_delay(attempt, retry_after=exc.retry_after))
                attempt += 1
            finally:
                close_old_connections()

    def _start_reader(self, kind: str) -> None:
        self._generation[kind] += 1
        if kind in kube.OPTIONAL_KINDS and not self.versions.get(kind):
            return  # the server does not serve it (its list answered 404): nothing to watch
        thread = threading.Thread(
            target=self._reader,
            args=(kind, self._generation[kind], self.versions[kind]),
            name=f"inventory-watch-{self.cluster.name}-{kind}",
            daemon=True,
        )
        thread.start()

    def start_watches(self) -> None:
        for kind in self.kinds:
            self._start_reader(kind)

    def run(self, *, resync_seconds: float | None = None, on_batch: Any = None) -> None:
        """Cold sync, then watch until stop_event is set, resyncing every ``resync_seconds``."""
        resync = resync_seconds if resync_seconds is not None else settings.INVENTORY_RESYNC_SECONDS
        self._on_batch = on_batch
        self.full_sync()  # cold: nothing is watched yet
        self.start_watches()
        next_resync = time.monotonic() + resync
        while not self.stop_event.is_set():
            batch = self._next_batch()
            self._relist_pending |= self._apply_and_beat(batch)
            self._relist_what_is_pending()
            if time.monotonic() >= next_resync:
                self.resync()
                next_resync = time.monotonic() + resync
        for kind in self.kinds:
            self._generation[kind] += 1

    def resync(self, *, on_page: Any = None) -> SyncReport:
        """The periodic full resync, with the watches running: their events keep reaching the rows
        between the list's pages (a resync of 5,000 nodes lists for most of a minute), and the drift
        it records is only what the watches missed. A kind whose watch answered 410 before or while
        the resync listed it has its watch restarted from that list; one after, is listed again."""
        report = self.full_sync(record_drift=True, live=True, on_page=on_page)
        self._relist_what_is_pending()
        return report

    def apply_queued(self) -> None:
        """Apply what the watches queued, without waiting for more (between a resync's pages)."""
        while True:
            batch: list[Queued] = []
            while len(batch) < BATCH_EVENTS:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            if not batch:
                return
            self._relist_pending |= self._apply_and_beat(batch)
            if len(batch) < BATCH_EVENTS:
                return

    def _apply_and_beat(self, batch: list[Queued]) -> set[str]:
        relist = self.apply_batch(batch)
        beat_after_batch(self, batch)
        if self._on_batch is not None and batch:
            self._on_batch(len(batch))
        return relist

    def _relist_what_is_pending(self) -> None:
        for kind in self.kinds:
            if kind in self._relist_pending:
                self._with_retries(kind, lambda k=kind: self.list_kind(k))
                self._count_relist(kind)
                self._relist_pending.discard(kind)
                self._start_reader(kind)

    def _resume_watch_from_list(self, kind: str, version: str) -> None:
        """A kind whose watch answered 410 before or while the resync listed it: the list's snapshot
        and a watch from its resourceVersion are complete together (what the old watch applied past
        it comes again, and applying it twice changes nothing)."""
        self.versions[kind] = version
        self._count_relist(kind)
        self._relist_pending.discard(kind)
        self._start_reader(kind)

    def _count_relist(self, kind: str) -> None:
        with transaction.atomic():
            SyncState.objects.filter(cluster=self.cluster, kind=kind).update(relists=F("relists") + 1)

    def _next_batch(self) -> list[Queued]:
        """Wait up to BATCH_SECONDS for an event, then take what is queued or arrives within
        BATCH_LINGER_SECONDS of it (up to BATCH_EVENTS). A backlog still fills whole batches; a trickle
        waits 50 ms, not the quarter second a fixed window made every first event of a batch wait
        (that window was most of the event-to-row latency at 200 events/s)."""
        try:
            batch = [self._queue.get(timeout=BATCH_SECONDS)]
        except queue.Empty:
            return []
        deadline = time.monotonic() + BATCH_LINGER_SECONDS
        while len(batch) < BATCH_EVENTS:
            try:
                batch.append(self._queue.get_nowait())
                continue
            except queue.Empty:
                pass
            timeout = deadline - time.monotonic()
            if timeout <= 0:
                break
            try:
                batch.append(self._queue.get(timeout=timeout))
            except queue.Empty:
                break
        return batch

    def apply_batch(self, batch: list[Queued]) -> set[str]:
        """Apply queued events, latest state per object, kinds in order; returns kinds to re-list."""
        relist: set[str] = set()
        latest: dict[str, dict[str, kube.WatchEvent]] = {kind: {} for kind in self.kinds}
        # Holders deleted within the batch: the state they last had before, by key.
        last_live: dict[str, dict[str, dict[str, Any]]] = {kind: {} for kind in self.kinds}
        versions: dict[str, str] = {}
        counts: dict[str, int] = dict.fromkeys(self.kinds, 0)
        for queued in batch:
            kind, item = queued.kind, queued.item
            if queued.generation != self._generation[kind]:
                continue  # from a watch that a re-list has replaced
            if isinstance(item, Relist):
                relist.add(kind)
            elif isinstance(item, kube.KubeError):
                self._record_error(kind, item)
            elif item.type == "BOOKMARK":
                versions[kind] = item.resource_version
            else:
                metadata = item.object.get("metadata") or {}
                key = str(metadata.get("uid") or metadata.get("name"))
                previous = latest[kind].get(key)
                # Keep the last live state even when the object is then deleted in the same batch, so
                # an interval that began and ended between two batches is still recorded.
                # (Holders only: their uids are never reused, unlike node or slice names.)
                holder = kind in (SyncKind.PODS, SyncKind.RESOURCE_CLAIMS)
                if holder and item.type == "DELETED" and previous is not None and previous.type != "DELETED":
                    last_live[kind][key] = previous.object
                latest[kind][key] = item
                versions[kind] = item.resource_version
                counts[kind] += 1
        with transaction.atomic():
            if self._live is not None:
                _page_commit_without_flush()
            for kind in self.kinds:
                if kind in relist or not latest[kind]:
                    continue
                live = [e.object for e in latest[kind].values() if e.type != "DELETED"]
                live += last_live[kind].values()
                gone = [e.object for e in latest[kind].values() if e.type == "DELETED"]
                if live:
                    apply_upserts(self.ctx, kind, live, listing=False)
                if gone:
                    apply_deletes(self.ctx, kind, gone)
                if self._live is not None:
                    self._live.note_applied(kind, [e.object for e in latest[kind].values()])
            self.ctx.flush_issues()
            now = timezone.now()
            for kind, version in versions.items():
                if kind in relist:
                    continue
                self.versions[kind] = version
                SyncState.objects.filter(cluster=self.cluster, kind=kind).update(
                    resource_version=version,
                    last_event_at=now,
                    last_success_at=now,
                    events=F("events") + counts[kind],
                )
        return relist


def record_sync_failure(*, cluster: Cluster, error: Exception, kinds: Sequence[str] | None = None) -> None:
    """Show a failed list or watch (or refused credentials: every kind) in the cluster's health."""
    kinds = KIND_ORDER if kinds is None else kinds
    log.warning("inventory sync %s/%s: %s", cluster.name, ",".join(kinds), error)
    for kind in kinds:
        SyncState.objects.update_or_create(
            cluster=cluster,
            kind=kind,
            defaults={"last_error": str(error)[:2000], "last_error_at": timezone.now()},
        )
