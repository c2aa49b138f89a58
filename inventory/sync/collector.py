"""No full garbage collections while a cold sync or a periodic resync lists.

CPython's cyclic collector runs a full (oldest generation) collection whenever the objects that
survived the younger ones grow by a quarter of those that survived the last full one. A list keeps
a page of decoded objects alive while it is applied and the next one read ahead (a page of 500
ResourceSlices is tens of MiB of dicts), so nearly every page crossed that line and the collector
walked every object of the process again: measured by ``gc.callbacks`` on the 1,000-node cold sync,
19 full collections took 5.5 s of its 21 s (the young generations 1.6 s more). The decoded objects
are trees, freed by their reference counts when the page is done; the young generations still
collect as before, so a cycle made and dropped within a page still goes. What a full collection
would have found is collected once the list is over (``gc.collect``), as before the list began.

A periodic resync lists with the watches running, and there a full collection held their events
with the writer: traced at 5,000 nodes (benchmarks/sync_trace.py), 47 of them in one resync, 0.2 to
1.1 s each (20 s in all), and not one found garbage. Its pause ends without the ``gc.collect``
(``collect=False``), which would be one more such stall; the collector's own schedule resumes after
it. Freezing the older heap instead (``gc.freeze``) left full collections of what a resync holds in
flight, as many and up to 1.8 s each in the same trace.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# A full collection needs this many collections of the middle generation first (CPython's default
# is 10, and the quarter rule above is what triggers it in practice): never, within one sync.
NO_FULL_COLLECTIONS = 1 << 30

# The thresholds are the process's: syncs overlapping in threads share one pause, and the threshold
# found by the first is put back by the last.
_lock = threading.Lock()
_paused = 0
_saved = 0
_collect = False  # whether one of the overlapping pauses wants the collection at the end


@contextmanager
def no_full_collections(*, collect: bool = True) -> Iterator[None]:
    global _paused, _saved, _collect
    with _lock:
        if _paused == 0:
            young, middle, _saved = gc.get_threshold()
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
                young, middle, _ = gc.get_threshold()
                gc.set_threshold(young, middle, _saved)
            collect_now = last and _collect
        if collect_now and gc.isenabled():
            gc.collect()
