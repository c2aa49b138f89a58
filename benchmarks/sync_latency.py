"""The sync benchmark's latency driver (``inventory_sync.py``): GPU pods created at a steady rate by a
process of its own, each timed from its write to its interval committed in the sync process's
database by a poller in a process of its own too.

Loaded by ``inventory_sync.py`` under its module name (``sys.modules``), so that the spawned driver
and poller processes find their functions by it (they import it from this directory, which is on
the benchmark's ``sys.path``).
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from pathlib import Path
from typing import Any

STAMP = "gpuplatform.bench/written-at"
WRITERS = 16


def drive_latency(
    kubeconfig: str,
    database_url: str,
    cluster_id: str,
    templates: list[tuple[str, str, str, int]],
    rate: float,
    seconds: float,
    out: str,
) -> None:
    """Its own process, so neither its client nor its polling competes with the sync process: create
    GPU pods at ``rate`` per second (open loop, each stamped with its write time in an annotation),
    while a process of its own (``poll_rows``) polls the sync process's database every 20 ms for each
    pod's committed interval. The poller was a thread here: beside 16 writers' Kubernetes clients it
    waited for the GIL, and on a loaded machine a row committed took ~0.5 s (median) to be seen."""
    import multiprocessing

    import yaml
    from kubernetes import client
    from kubernetes import config as k8s_config

    configuration = client.Configuration()
    k8s_config.load_kube_config_from_dict(
        config_dict=yaml.safe_load(kubeconfig), client_configuration=configuration
    )
    core = client.CoreV1Api(client.ApiClient(configuration))
    total = int(rate * seconds)
    errors: list[str] = []
    context = multiprocessing.get_context("spawn")
    written_uids: Any = context.Queue()  # (uid, write time) of each pod created, then None
    polled = f"{out}.polled"
    poller = context.Process(target=poll_rows, args=(database_url, cluster_id, written_uids, polled))
    poller.start()
    started = time.time() + 0.5

    def write(offset: int, threads: int) -> None:
        for i in range(offset, total, threads):
            delay = started + i / rate - time.time()
            if delay > 0:
                time.sleep(delay)
            namespace, node, resource, count = templates[i % len(templates)]
            written = time.time()
            body = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"bench-latency-{i}",
                    "namespace": namespace,
                    "annotations": {STAMP: f"{written:.6f}"},
                },
                "spec": {
                    "nodeName": node,
                    "containers": [
                        {"name": "main", "image": "bench", "resources": {"limits": {resource: str(count)}}}
                    ],
                },
            }
            try:
                response = core.create_namespaced_pod(namespace, body, _preload_content=False)
            except Exception as exc:  # reported, not fatal: the figure says how many were seen
                errors.append(str(exc)[:200])
                continue
            written_uids.put((json.loads(response.data)["metadata"]["uid"], written))

    # Enough writers that a slow create (kubesim validates each pod) does not hold the rate back.
    writers = [threading.Thread(target=write, args=(n, WRITERS)) for n in range(WRITERS)]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    write_seconds = time.time() - started
    written_uids.put(None)
    poller.join()
    found = json.loads(Path(polled).read_text())
    samples, never_seen = found["samples"], found["never_seen_written"]
    latencies = sorted(seconds for _, seconds in samples)
    pct = percentiles(latencies)
    result = {
        "latency_rate_asked": rate,
        "latency_rate_written": round((total - len(errors)) / write_seconds, 1),
        "latency_events": total,
        "latency_write_errors": len(errors),
        "latency_rows_seen": len(latencies),
        "latency_never_seen": len(never_seen),
        "latency_p50_s": pct(0.50),
        "latency_p99_s": pct(0.99),
        "latency_max_s": round(latencies[-1], 3) if latencies else None,
        "latency_first_error": errors[0] if errors else None,
        "samples": samples,
        "never_seen_written": never_seen,
    }
    Path(out).write_text(json.dumps(result))


def poll_rows(database_url: str, cluster_id: str, written_uids: Any, out: str) -> None:
    """The driver's poller, in a process of its own: every 20 ms, which of the pods written so far
    (uid, write time from ``written_uids``) have their open interval committed; then up to 30 s more
    for the last ones once ``written_uids`` says None (all written). Writes its samples to ``out``."""
    import queue

    import psycopg

    outstanding: dict[str, float] = {}
    samples: list[tuple[float, float]] = []  # (written, seconds to its row)
    deadline = None
    with psycopg.connect(database_url, autocommit=True) as conn:
        while True:
            while deadline is None:
                try:
                    item = written_uids.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    deadline = time.time() + 30
                else:
                    outstanding[item[0]] = item[1]
            if outstanding:
                # ended_at is checked here, not in SQL: with it there, the planner (the benchmark's new
                # database is never analysed: autovacuum is off) scanned every open interval of the
                # cluster and tested each against the whole array; as the outstanding uids grew
                # under load, each poll took longer and more piled up (the resync phase's P50 read
                # 13-79 s where the sync process committed its rows in 0.4-0.5 s). By the index on
                # (cluster, holder_uid): one probe per outstanding uid.
                rows = conn.execute(
                    "SELECT holder_uid, ended_at FROM inventory_allocation WHERE cluster_id = %s"
                    " AND holder_uid = ANY(%s)",
                    (cluster_id, list(outstanding)),
                ).fetchall()
                seen = time.time()
                for uid, ended in rows:
                    if ended is None and uid in outstanding:
                        written = outstanding.pop(uid)
                        samples.append((written, seen - written))
            if deadline is not None and (not outstanding or time.time() > deadline):
                break
            time.sleep(0.02)
    Path(out).write_text(json.dumps({"samples": samples, "never_seen_written": sorted(outstanding.values())}))


def percentiles(latencies: list[float]) -> Any:
    def pct(q: float) -> float | None:
        return round(latencies[min(len(latencies) - 1, int(q * len(latencies)))], 3) if latencies else None

    return pct


def drive(
    args: argparse.Namespace,
    kubeconfig: Path,
    url: str,
    cluster: Any,
    templates: Any,
    seconds: float,
    out: Path,
) -> Any:
    import multiprocessing

    driver = multiprocessing.get_context("spawn").Process(
        target=drive_latency,
        args=(kubeconfig.read_text(), url, str(cluster.pk), templates, args.latency_rate, seconds, str(out)),
    )
    driver.start()
    return driver
