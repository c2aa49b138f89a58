"""How fast kubesim serves what an inventory sync asks of it.

1. Paginated list: every pod of a large cluster in pages of 500, through the official client with
   `_preload_content=False` (raw bytes, as the sync reads them) and the page parsed for its continue token.
2. One watch: events delivered per second to one official-client watch stream, (a) replaying history
   after a burst of writes (the server's delivery rate) and (b) live, while a writer thread commits.

    .venv/bin/python benchmarks/kubesim_serving.py --nodes 5000 --pods-per-node 4 --runs 5

Medians of --runs runs. By default two simulators, one over HTTPS and one over plain HTTP, are measured
side by side (--transport both): list pages fetched in turn, each timed on its own, then each one's
watches in turn; --transport tls|plain measures one. The cluster is synthetic:
GFD-labelled 8-GPU nodes and single-container pods bound to them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from dataclasses import dataclass
from typing import Any

from kubernetes import client

import kubesim


@dataclass(frozen=True, slots=True)
class Run:
    list_pages_s: float
    pages: int
    items: int
    replay_events_s: float
    live_events_s: float


def synthetic_objects(nodes: int, pods_per_node: int) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for n in range(nodes):
        name = f"gpu-node-{n:05d}"
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {
                        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                        "nvidia.com/gpu.count": "8",
                        "nvidia.com/mig.strategy": "single",
                        "kubernetes.io/hostname": name,
                    },
                },
                "status": {
                    "capacity": {"nvidia.com/gpu": "8", "cpu": "96", "memory": "1056000Mi"},
                    "allocatable": {"nvidia.com/gpu": "8", "cpu": "95", "memory": "1040000Mi"},
                },
            }
        )
        for p in range(pods_per_node):
            objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"train-{n:05d}-{p}",
                        "namespace": f"team-{n % 50:02d}",
                        "labels": {"app": "train"},
                    },
                    "spec": {
                        "nodeName": name,
                        "containers": [
                            {
                                "name": "main",
                                "image": "nvcr.io/nvidia/pytorch:24.05",
                                "resources": {"limits": {"nvidia.com/gpu": "2"}},
                            }
                        ],
                    },
                    "status": {"phase": "Running"},
                }
            )
    return objects


def read_events(core: client.CoreV1Api, rv: str, expected: int) -> float:
    resp = core.list_pod_for_all_namespaces(
        watch=True, resource_version=rv, timeout_seconds=120, _preload_content=False
    )
    started = time.perf_counter()
    seen = 0
    buffer = b""
    for chunk in resp.stream(amt=None, decode_content=False):
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line:
                json.loads(line)  # the client parses every event
                seen += 1
        if seen >= expected:
            break
    elapsed = time.perf_counter() - started
    resp.close()  # not release_conn(): the server is still streaming on that connection
    resp.release_conn()
    return elapsed


def burst(sim: kubesim.Sim, names: list[tuple[str, str]], rounds: int) -> None:
    # Each write must change something: an identical write is a no-op without an event.
    base = sim.store.resource_version
    for i in range(rounds):
        ns, name = names[i % len(names)]
        sim.store.patch_merge("pods", ns, name, {"metadata": {"annotations": {"bench/write": f"{base}-{i}"}}})


def paired_list(cores: dict[str, client.CoreV1Api], limit: int) -> dict[str, tuple[int, int, float]]:
    """Every page of each simulator's list, the transports taking turns page by page and each page
    timed on its own: load from other processes on a shared host then falls on both alike."""
    tokens: dict[str, str | None] = dict.fromkeys(cores)
    totals = {t: [0, 0, 0.0] for t in cores}
    active = set(cores)
    while active:
        for transport in sorted(active):
            kwargs: dict[str, Any] = {"limit": limit, "_preload_content": False}
            if tokens[transport]:
                kwargs["_continue"] = tokens[transport]
            started = time.perf_counter()
            body = json.loads(cores[transport].list_pod_for_all_namespaces(**kwargs).data)
            total = totals[transport]
            total[2] += time.perf_counter() - started
            total[0] += 1
            total[1] += len(body["items"])
            tokens[transport] = body["metadata"].get("continue")
            if not tokens[transport]:
                active.discard(transport)
    return {t: (int(v[0]), int(v[1]), float(v[2])) for t, v in totals.items()}


def watch_rates(
    sim: kubesim.Sim, core: client.CoreV1Api, pod_names: list[tuple[str, str]], events: int
) -> tuple[float, float]:
    rv = str(sim.store.resource_version)
    burst(sim, pod_names, events)
    replay = events / read_events(core, rv, events)
    rv = str(sim.store.resource_version)
    writer = threading.Thread(target=burst, args=(sim, pod_names, events))
    writer.start()
    live = events / read_events(core, rv, events)
    writer.join()
    return replay, live


def _summary(values: list[float], digits: int) -> str:
    runs = ", ".join(f"{v:.{digits}f}" for v in values)
    return f"median {statistics.median(values):.{digits}f} (runs: {runs})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods-per-node", type=int, default=4)
    parser.add_argument("--limit", type=int, default=500)
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--transport",
        choices=("both", "tls", "plain"),
        default="both",
        help="both: a TLS and a plain-HTTP simulator measured in alternating runs, side by side",
    )
    args = parser.parse_args()

    objects = synthetic_objects(args.nodes, args.pods_per_node)
    pod_names = [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects if o["kind"] == "Pod"]
    transports = {"both": ("tls", "plain"), "tls": ("tls",), "plain": ("plain",)}[args.transport]
    sims: dict[str, kubesim.Sim] = {}
    try:
        for transport in transports:
            sim = kubesim.start(history_window=args.events * 2, tls=transport == "tls")
            t0 = time.perf_counter()
            sim.store.bulk_load(objects)
            print(
                f"{transport} ({sim.url}): loaded {len(objects)} objects in {time.perf_counter() - t0:.1f}s"
            )
            sims[transport] = sim
        cores = {t: client.CoreV1Api(s.api_client()) for t, s in sims.items()}
        results: dict[str, list[Run]] = {t: [] for t in transports}
        # Alternating (pages in turn, then each watch in turn) shares a shared host's noise between the two.
        for _ in range(args.runs):
            lists = paired_list(cores, args.limit)
            for transport in transports:
                pages, items, secs = lists[transport]
                replay, live = watch_rates(sims[transport], cores[transport], pod_names, args.events)
                run = Run(pages / secs, pages, items, replay, live)
                results[transport].append(run)
                print(
                    f"  run {len(results[transport])} {transport}: {run.list_pages_s:.1f} pages/s, "
                    f"replay {run.replay_events_s:.0f} events/s, live {run.live_events_s:.0f} events/s",
                    flush=True,
                )
        for transport, runs in results.items():
            first = runs[0]
            print(f"[{transport}] list: {first.items} pods in {first.pages} pages of {args.limit}: ", end="")
            print(_summary([r.list_pages_s for r in runs], 1) + " pages/s")
            print(
                f"[{transport}] watch replay: " + _summary([r.replay_events_s for r in runs], 0) + " events/s"
            )
            print(
                f"[{transport}] watch live (writer in the same process): "
                + _summary([r.live_events_s for r in runs], 0)
                + " events/s"
            )
        if len(transports) == 2:
            for label, attr in (
                ("list pages/s", "list_pages_s"),
                ("watch replay events/s", "replay_events_s"),
                ("watch live events/s", "live_events_s"),
            ):
                tls = statistics.median(getattr(r, attr) for r in results["tls"])
                plain = statistics.median(getattr(r, attr) for r in results["plain"])
                print(f"TLS / plain HTTP, {label}: {tls / plain:.2f}")
    finally:
        for sim in sims.values():
            sim.stop()


if __name__ == "__main__":
    main()
