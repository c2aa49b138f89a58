"""The sync benchmark's resync phase (``inventory_sync.py``): event to committed row while the
periodic full resync runs, on the code of the measured tree (loaded by path, like sync_workloads)."""

from __future__ import annotations

import argparse
import gc
import json
import os
import threading
import time
from pathlib import Path
from typing import Any


def resync_as_run_does(syncer: Any) -> Any:
    """The periodic resync of ClusterSync.run, on this tree's code: ``resync`` where the watches keep
    running through it; before that, the watches stopped, a full sync, the watches restarted."""
    if hasattr(syncer, "resync"):
        return syncer.resync()
    for kind in syncer.kinds:
        syncer._generation[kind] += 1  # readers of the old generation stop and are ignored
    report = syncer.full_sync(record_drift=True)
    for kind in syncer.kinds:
        syncer._start_reader(kind)
    return report


def latency_during_resync(
    drive: Any,
    percentiles: Any,
    args: argparse.Namespace,
    syncer: Any,
    kubeconfig: Path,
    url: str,
    templates: Any,
    workdir: Path,
    cold: float,
) -> dict[str, Any]:
    """Pods created at --latency-rate while a full resync runs; the figures of those written during it."""
    # Long enough that the resync ends while pods are still written (it lists what the cold sync did).
    seconds = args.resync_latency_seconds or min(300.0, cold * 1.5 + 10)
    out = workdir / "latency-resync.json"
    driver = drive(args, kubeconfig, url, syncer.cluster, templates, seconds, out)
    # Batches applied and beaten as ClusterSync.run does: its watch loop has beaten long before a
    # resync, where the first beat (Django's URL resolver loaded for the heartbeat's link, ~0.9 s)
    # otherwise fell inside the resync, in its first drain.
    apply = getattr(syncer, "_apply_and_beat", syncer.apply_batch)
    lead = time.monotonic() + 3  # the driver's process starts and writes before the resync begins
    while time.monotonic() < lead:
        apply(syncer._next_batch())
    trace = None
    if os.environ.get("INVENTORY_BENCH_TRACE"):  # where the writer's time goes (sync_trace.py)
        trace = _trace_module().WriterTrace(syncer)
        trace.install()
        apply = syncer._apply_and_beat
    memory = RssByList(syncer)
    begun = time.time()
    report = resync_as_run_does(syncer)
    ended = time.time()
    memory.stop()
    while driver.is_alive():
        apply(syncer._next_batch())
    driver.join()
    if trace is not None:
        trace.write(os.environ["INVENTORY_BENCH_TRACE"], begun, ended)
    if not out.exists():
        return {"resync_latency": "driver failed"}
    found = json.loads(out.read_text())
    during = sorted(seconds for written, seconds in found["samples"] if begun <= written <= ended)
    lost = sum(1 for written in found["never_seen_written"] if begun <= written <= ended)
    pct = percentiles(during)
    return {
        **memory.figures(),
        "resync_s": round(ended - begun, 1),
        "resync_drift": report.drift,
        "resync_latency_events": len(during) + lost,
        "resync_latency_never_seen": lost,
        "resync_latency_p50_s": pct(0.50),
        "resync_latency_p99_s": pct(0.99),
        "resync_latency_max_s": round(during[-1], 3) if during else None,
        "resync_latency_rate_written": found["latency_rate_written"],
    }


def _trace_module() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("sync_trace", Path(__file__).with_name("sync_trace.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rss_mib() -> float:
    """The process's resident set now (not its peak), in MiB."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class RssByList:
    """The resident set sampled while the resync runs, its peak per list (the kind being listed, or
    "between" outside a list), and what the cyclic collector finds once the resync is over."""

    SECONDS = 0.1

    def __init__(self, syncer: Any) -> None:
        self.syncer = syncer
        self.start = rss_mib()
        self.tracked_start = [len(gc.get_objects(generation)) for generation in range(3)]
        self.traced = os.environ.get("INVENTORY_BENCH_TRACEMALLOC")
        if self.traced:  # what the resync allocates and still holds at its end (slows it: a probe)
            import tracemalloc

            tracemalloc.start(12)
        self.peaks: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="bench-rss", daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(self.SECONDS):
            live = getattr(self.syncer, "_live", None)
            kind = getattr(live, "kind", None) or "between"
            self.peaks[kind] = max(self.peaks.get(kind, 0.0), rss_mib())

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.end = rss_mib()
        self.tracked = [len(gc.get_objects(generation)) for generation in range(3)]
        if self.traced:
            import tracemalloc

            snapshot = tracemalloc.take_snapshot()
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            lines = [f"traced peak {peak / 2**20:.1f} MiB"]
            for key in ("filename", "lineno", "traceback"):
                lines.append(f"== by {key}")
                for stat in snapshot.statistics(key)[:25]:
                    lines.append(f"{stat.size / 2**20:8.1f} MiB {stat.count:9} blocks")
                    lines.extend("      " + line for line in stat.traceback.format()[-12:])
            with open(self.traced, "w") as out:
                out.write("\n".join(lines))

    def figures(self) -> dict[str, Any]:
        """Taken after the phase (the collection here is after every figure the phase times)."""
        before = rss_mib()
        collected = gc.collect()
        return {
            "resync_rss_mib_start": round(self.start),
            "resync_rss_mib_peak_by_list": {kind: round(mib) for kind, mib in self.peaks.items()},
            "resync_rss_mib_end": round(self.end),
            "resync_gc_tracked_start": self.tracked_start,
            "resync_gc_tracked_end": self.tracked,
            "resync_gc_collected_after": collected,
            "resync_rss_mib_after_phase": round(before),
            "resync_rss_mib_after_collect": round(rss_mib()),
        }
