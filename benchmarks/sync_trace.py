"""A trace of the sync writer's steps during the resync phase (``inventory_sync.py`` with
``INVENTORY_BENCH_TRACE=DIR``): where an event waits between its arrival and its committed row.

Wraps the syncer's instance (nothing of the measured tree is changed): each drain of the watches'
queue (``_apply_and_beat``) timed, with the stamped pods it committed; the time each stamped pod
reached the watch reader (the queue's ``put``); every collection of the cyclic garbage collector
(``gc.callbacks``); and a watchdog thread that samples the writer's stack while no drain has run for
``STALL_SECONDS``. Written to DIR/trace-<pid>.json when the phase ends; ``summarise`` reads it.
"""

from __future__ import annotations

import gc
import itertools
import json
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

STAMP = "gpuplatform.bench/written-at"
STALL_SECONDS = 0.3


class WriterTrace:
    def __init__(self, syncer: Any) -> None:
        self.syncer = syncer
        self.arrived: dict[str, float] = {}  # stamped pod uid -> time its event was queued
        self.committed: dict[str, float] = {}  # -> time the drain that applied it returned
        self.written: dict[str, float] = {}  # -> the driver's write time (its annotation)
        self.drains: list[tuple[float, float, int]] = []  # (start, end, events)
        self.collections: list[tuple[float, float, int, int]] = []  # (start, seconds, generation, collected)
        self.stalls: list[tuple[float, str]] = []  # (time, the writer's stack) while no drain ran
        self._gc_started = 0.0
        self._last_drain_end = time.time()
        self._in_drain = False
        self._drain_began = 0.0
        self._writer = threading.get_ident()
        self._stop = threading.Event()

    def install(self) -> None:
        syncer, put = self.syncer, self.syncer._queue.put

        def traced_put(queued: Any, *args: Any, **kwargs: Any) -> None:
            uid, written = _stamped(queued)
            if uid is not None:
                self.arrived.setdefault(uid, time.time())
                self.written[uid] = written
            put(queued, *args, **kwargs)

        syncer._queue.put = traced_put
        apply = syncer._apply_and_beat

        def traced_apply(batch: list[Any]) -> Any:
            began = time.time()
            self._drain_began = began
            self._in_drain = True
            try:
                return apply(batch)
            finally:
                ended = time.time()
                self._in_drain = False
                self._last_drain_end = ended
                self.drains.append((began, ended, len(batch)))
                for queued in batch:
                    uid, _ = _stamped(queued)
                    if uid is not None:
                        self.committed.setdefault(uid, ended)

        syncer._apply_and_beat = traced_apply
        gc.callbacks.append(self._on_gc)
        threading.Thread(target=self._watchdog, name="bench-trace-watchdog", daemon=True).start()

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_started = time.time()
        else:
            seconds = time.time() - self._gc_started
            if info["generation"] == 2 or seconds > 0.01:
                self.collections.append(
                    (self._gc_started, seconds, info["generation"], info.get("collected", 0))
                )

    def _watchdog(self) -> None:
        while not self._stop.wait(0.1):
            since = self._drain_began if self._in_drain else self._last_drain_end
            if time.time() - since < STALL_SECONDS:
                continue
            frame = sys._current_frames().get(self._writer)
            if frame is not None:
                stack = traceback.extract_stack(frame)
                # our frames (inventory/), then the innermost three wherever they are
                ours = [f for f in stack[:-3] if "/inventory/" in f.filename][-6:] + stack[-3:]
                names = " | ".join(f"{Path(f.filename).name}:{f.lineno}:{f.name}" for f in ours)
                self.stalls.append((time.time(), ("drain: " if self._in_drain else "") + names))

    def write(self, directory: str, begun: float, ended: float) -> None:
        self._stop.set()
        gc.callbacks.remove(self._on_gc)
        out = Path(directory) / f"trace-{time.time():.0f}.json"
        out.write_text(
            json.dumps(
                {
                    "begun": begun,
                    "ended": ended,
                    "pods": [
                        (self.written[uid], arrived, self.committed.get(uid))
                        for uid, arrived in self.arrived.items()
                    ],
                    "drains": self.drains,
                    "collections": self.collections,
                    "stalls": self.stalls,
                }
            )
        )
        print(f"trace written to {out}", file=sys.stderr, flush=True)


def _stamped(queued: Any) -> tuple[str | None, float]:
    item = getattr(queued, "item", None)
    obj = getattr(item, "object", None)
    if not isinstance(obj, dict) or getattr(item, "type", "") != "ADDED":
        return None, 0.0
    metadata = obj.get("metadata") or {}
    stamp = (metadata.get("annotations") or {}).get(STAMP)
    if stamp is None:
        return None, 0.0
    return metadata.get("uid"), float(stamp)


def summarise(path: str, gap: float = STALL_SECONDS) -> None:
    """Print where the resync's events waited: delivery (write -> our reader) and the writer
    (reader -> committed), the gaps between drains over ``gap`` with what ran in them."""
    trace = json.loads(Path(path).read_text())
    begun, ended = trace["begun"], trace["ended"]
    pods = [p for p in trace["pods"] if begun <= p[0] <= ended and p[2] is not None]

    def pct(values: list[float], q: float) -> float:
        values = sorted(values)
        return round(values[min(len(values) - 1, int(q * len(values)))], 3) if values else float("nan")

    delivery = [a - w for w, a, _ in pods]
    writer = [c - a for _, a, c in pods]
    total = [c - w for w, _, c in pods]
    print(f"resync {ended - begun:.1f} s, stamped pods {len(pods)}")
    for name, values in (("write->reader", delivery), ("reader->commit", writer), ("write->commit", total)):
        print(f"  {name:15} P50 {pct(values, 0.5)} P99 {pct(values, 0.99)} max {pct(values, 1.0)}")
    drains = [d for d in trace["drains"] if begun <= d[0] <= ended]
    print(f"drains {len(drains)}, busy {sum(e - s for s, e, _ in drains):.1f} s")
    full = [c for c in trace["collections"] if begun <= c[0] <= ended]
    print(
        f"collections: {len(full)} over 10 ms or full, {sum(c[1] for c in full):.2f} s;"
        f" full {[round(c[1], 2) for c in full if c[2] == 2]}"
    )
    windows = [
        (end_a, start_b, f"gap {start_b - end_a:.2f} s (next drain {n} events, {end_b - start_b:.2f} s)")
        for (_, end_a, _), (start_b, end_b, n) in itertools.pairwise(drains)
        if start_b - end_a > gap
    ]
    windows += [(s, e, f"long drain {e - s:.2f} s ({n} events)") for s, e, n in drains if e - s > gap]
    for start_w, end_w, what in sorted(windows):
        print(f"{what} at +{start_w - begun:.1f} s")
        for start, seconds, generation, collected in trace["collections"]:
            if start_w <= start <= end_w:
                print(f"    gc gen{generation} {seconds:.2f} s collected {collected}")
        seen: set[str] = set()
        for when, stack in trace["stalls"]:
            if start_w <= when <= end_w + 0.1:
                key = stack
                if key not in seen:
                    seen.add(key)
                    print(f"    +{when - start_w:.1f}: {key}")


if __name__ == "__main__":
    summarise(sys.argv[1], *(float(a) for a in sys.argv[2:]))
