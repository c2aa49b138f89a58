"""No full garbage collections while a cold sync or a periodic resync lists.

CPython's cyclic collector runs a full (oldest generation) collection whenever the objects that
survived the younger ones grow by a quarter of those that survived the last full one. A list keeps
a page of decoded objects alive while it is applied and the next one read ahead (a page of 500
ResourceSlices is tens of MiB of dicts), so nearly every page crossed that line and the collector
walked every object of the process again: measured by ``gc.callbacks`` on the 1,000-node cold sync,
19 full collections took 5.5 s of its 21 s (the young generations 1.6 s more). The decoded objects
are trees, freed by their reference counts when the page is done; a cycle made and dropped within a
page still goes at the next young collection (rarer in a cold sync: below). What a full collection
would have found is collected once the list is over (``gc.collect``), as before the list began.

A cold sync pauses the young generations too, for the same reason: a decoded page lives while it is
applied (and the next is read ahead), so nearly all of its objects survived the young collections
that ran meanwhile and each was walked twice on its way to the oldest generation for nothing. Timed
by ``gc.callbacks`` on the 1,000-node cold sync with 4,000 Workloads: 3,515 young and 320 middle
collections, 1.2 s of the sync process's 8.8 CPU seconds. With the young threshold at a million
tracked objects none ran in that sync: what the sync keeps and frees never grew by that many, so the
garbage cycles a page makes (few: the decoded objects are trees) still wait at most that long.

A periodic resync lists with the watches running, and there a full collection held their events
with the writer: traced at 5,000 nodes (benchmarks/sync_trace.py), 47 of them in one resync, 0.2 to
1.1 s each (20 s in all), and not one found garbage. Its pause ends without the ``gc.collect``
(``collect=False``), which would be one more such stall; the collector's own schedule resumes after
it. Freezing the older heap instead (``gc.freeze``) left full collections of what a resync holds in
flight, as many and up to 1.8 s each in the same trace. A resync's young generations collect as
usual: it runs for minutes beside the watches, and a young collection of a million objects would be
a stall of its own.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# A full collection needs this many collections of the middle generation first (CPython's default
# is 10, and the quarter rule above is what triggers it in practice): never, within one sync.
NO_FULL_COLLECTIONS = 1 << 30
# The young generation's threshold during a cold sync: collected only after this many more tracked
# objects were made than freed (CPython's default is 700).
YOUNG_DURING_SYNC = 1_000_000

# The thresholds are the process's: syncs overlapping in threads share one pause, and the threshold
# found by the first is put back by the last.
_lock = threading.Lock()
_paused = 0
_saved: tuple[int, int, int] = (700, 10, 10)
_collect = False  # whether one of the overlapping pauses wants the collection at the end


@contextmanager
def no_full_collections(*, collect: bool = True) -> Iterator[None]:
    global _paused, _saved, _collect
    with _lock:
        if _paused == 0:
            _saved = gc.get_threshold()
            young, middle, _ = _saved
            if collect:  # a cold sync's pause (see above)
                young = max(young, YOUNG_DURING_SYNC)
            gc.set_threshold(young, middle, NO_FULL_COLLECTIONS)
            _collect = False
        _paused += 1
        _collect |= collect
    try:
        yield
    finally:
        with _lock:
            _paused -= 1
            last = _paused == 0
            if last:
                gc.set_threshold(*_saved)
            collect_now = last and _collect
        if collect_now and gc.isenabled():
            gc.collect()
