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

The list's end is made in parts too (``stored_key_parts``, ``vanished_parts``): reading the open
intervals of 150,000 pods or the uids of 100,000 claims in one query, then closing what vanished in
one transaction, held the watches' events for seconds. Reading the stored keys in parts with the
watch applying events between them finds the same vanished keys: the only writer between the parts
is the watch, and what it touches is taken as seen.

Keys are ``handlers.object_key``: what ``ListState`` and ``finish_list`` compare (uids for holders
and Workloads, names for nodes, slices, classes and rules).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet

from inventory.domain.raw_fields import dig
from inventory.models import Allocation, HolderKind, ResourceClaim, SyncKind
from inventory.sync.context import SyncContext, UnitRef, device_refs
from inventory.sync.handlers import object_key, stored_keys

# A page is applied in parts between two drains of the watches' queue, each sized to take about
# PART_SECONDS by what the kind's last parts took per object: 50 ResourceSlices take ~0.1 s, 50 pods a
# tenth of it (parts of 50 for every kind made the pods' and claims' lists ten transactions a page).
PART_SECONDS = 0.1
FIRST_PART, SMALLEST_PART, LARGEST_PART = 50, 10, 1000
# Keys read per query at a live list's end, and vanished keys closed per transaction: each part
# takes tens of milliseconds, so the watch's events wait for one part, not for the whole end.
READ_PART = 10_000
CLOSE_PART = 500
# DRA devices read per query when a claims list primes its device map: a row is a join and a JSON
# document, and 10,000 took 1.3 to 2.1 s a part under load (traced at 5,000 nodes).
DEVICE_PART = 1_000
# ResourceSlices per page of a live list (the other kinds keep the sync's page size). A page of 500
# at 5,000 nodes is tens of MiB as the server's answer and several times that decoded, and the list
# holds two (the one applied, the one read ahead) beside the caches the resync keeps and the
# watches' own: the sync process's peak came in that list (sampled: 388 MiB before it, 541 in it).
SLICE_PAGE = 100


@dataclass
class LiveList:
    """The kind a resync is listing while its watch runs, and what the watch applied meanwhile."""

    kind: str
    # Whether its watch is alive and caught up to a known resourceVersion: only then can an entry
    # newer than the watch be left to it (a watch that answered 410 delivers nothing more).
    watched: bool
    touched: set[str] = field(default_factory=set)
    seconds_per_object: float | None = None  # what its parts took, lately (see part_size)

    def part_size(self) -> int:
        """How many of a page's objects to apply before the next drain."""
        if not self.seconds_per_object:
            return FIRST_PART
        return max(SMALLEST_PART, min(LARGEST_PART, int(PART_SECONDS / self.seconds_per_object)))

    def part_took(self, objects: int, seconds: float) -> None:
        """A part of ``objects`` took ``seconds``: half the next part's estimate (the machine's load
        and the kind's objects vary; a list's first part also reads what its pages then look up)."""
        if objects:
            latest = seconds / objects
            previous = self.seconds_per_object
            self.seconds_per_object = latest if previous is None else (previous + latest) / 2

    def note_applied(self, kind: str, objects: Iterable[dict[str, Any]]) -> None:
        """Called by the watch's batch for every object it applied (upserted or deleted)."""
        if kind == self.kind:
            self.touched.update(object_key(kind, obj) for obj in objects)


def live_page_size(kind: str, size: int) -> int:
    """The page size of a live list of ``kind``, the sync's being ``size`` (see SLICE_PAGE)."""
    return min(size, SLICE_PAGE) if kind == SyncKind.RESOURCE_SLICES else size


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


def stored_key_parts(ctx: SyncContext, kind: str) -> Iterator[set[str]]:
    """``handlers.stored_keys`` in parts, for the two kinds that hold over a hundred thousand keys at
    5,000 nodes (pods' open intervals, claims); the others' are read in one query."""
    if kind == SyncKind.PODS:
        yield from _key_parts(_open_holders(ctx, HolderKind.POD), "holder_uid")
    elif kind == SyncKind.RESOURCE_CLAIMS:
        yield from _key_parts(ResourceClaim.objects.filter(cluster=ctx.cluster, present=True), "uid")
        yield from _key_parts(_open_holders(ctx, HolderKind.CLAIM), "holder_uid")
    else:
        yield stored_keys(ctx, kind)


def lookup_parts(ctx: SyncContext, kind: str) -> Iterator[tuple[str, Iterator[set[str]]]]:
    """The key sets that a list's first part would read whole on first use (``ctx.stored_keys``,
    under the names ``dra.apply_claims`` and ``pods.apply_pods`` give them), each in parts: at 5,000
    nodes the claims' uids and the pods' open intervals are 100,000 keys and more, a read of a second
    and more that held the watches' events in the list's first part. Read when the list begins, so
    they are what ``stored_keys`` says: the rows when this list began (what the watch changes since,
    it touched, and the list leaves it to the watch)."""
    if kind == SyncKind.PODS:
        yield "open pods", _key_parts(_open_holders(ctx, HolderKind.POD), "holder_uid")
    elif kind == SyncKind.RESOURCE_CLAIMS:
        yield "claims", _key_parts(ResourceClaim.objects.filter(cluster=ctx.cluster), "uid")
        yield "open claims", _key_parts(_open_holders(ctx, HolderKind.CLAIM), "holder_uid")


def device_parts(ctx: SyncContext) -> Iterator[dict[tuple[str, str, str], UnitRef]]:
    """``SyncContext.dra_devices`` in parts of DEVICE_PART rows in primary-key order, for a claims list
    to prime before its first part: each list drops the map (``reset_lookups``), and its first part
    read every counted device whole (tens of thousands of rows, each with its JSON; seconds at
    5,000 nodes, found by a trace of the writer). The rows when the list began, as the key sets."""
    rows = ctx.device_rows()
    shared: dict[Any, Any] = {}  # across the parts (see context.shared_value)
    after = None
    while True:
        part = list((rows if after is None else rows.filter(pk__gt=after)).order_by("pk")[:DEVICE_PART])
        yield device_refs(part, shared)
        if len(part) < DEVICE_PART:
            return
        after = part[-1][0]


def _open_holders(ctx: SyncContext, kind: str) -> QuerySet[Allocation]:
    return Allocation.objects.filter(cluster=ctx.cluster, holder_kind=kind, ended_at__isnull=True)


def _key_parts(rows: QuerySet[Any], key: str) -> Iterator[set[str]]:
    """The distinct values of ``key`` among ``rows``, READ_PART at a time in key order (each part
    starts past the last: an index range scan, not an offset)."""
    after: str | None = None
    while True:
        part = rows if after is None else rows.filter(**{f"{key}__gt": after})
        keys = list(part.order_by(key).values_list(key, flat=True).distinct()[:READ_PART])
        yield set(keys)
        if len(keys) < READ_PART:
            return
        after = keys[-1]


def vanished_parts(live: LiveList, gone: set[str]) -> Iterator[set[str]]:
    """The vanished keys in parts of CLOSE_PART, each without what the watch touched meanwhile (the
    watch's to close; the list would count it as drift). At least one part, empty when nothing
    vanished, as ``finish_list`` closes an empty set too."""
    ordered = sorted(gone)
    for start in range(0, max(len(ordered), 1), CLOSE_PART):
        yield {key for key in ordered[start : start + CLOSE_PART] if key not in live.touched}
