"""How fast kubesim serves what an inventory sync asks of it.

1. Paginated list: every pod of a large cluster in pages of 500, through the official client with
   `_preload_content=False` (raw bytes, as the sync reads them) and the page parsed for its continue token.
2. One watch: events delivered per second to one official-client watch stream, (a) replaying history
   after a burst of writes (the server's delivery rate) and (b) live, while a writer thread commits.

    .venv/bin/python benchmarks/kubesim_serving.py --nodes 5000 --pods-per-node 4 --runs 5

Medians of --runs runs. Without kubesim.scenarios the cluster is synthetic: GFD-labelled 8-GPU nodes and
single-container pods bound to them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from typing import Any

from kubernetes import client

import kubesim


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


def list_all_pages(core: client.CoreV1Api, limit: int) -> tuple[int, int, float]:
    started = time.perf_counter()
    pages = items = 0
    token = None
    while True:
        kwargs = {"limit": limit, "_preload_content": False}
        if token:
            kwargs["_continue"] = token
        body = json.loads(core.list_pod_for_all_namespaces(**kwargs).data)
        pages += 1
        items += len(body["items"])
        token = body["metadata"].get("continue")
        if not token:
            return pages, items, time.perf_counter() - started


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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods-per-node", type=int, default=4)
    parser.add_argument("--limit", type=int, default=500)
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    objects = synthetic_objects(args.nodes, args.pods_per_node)
    with kubesim.start(history_window=args.events * 2) as sim:
        t0 = time.perf_counter()
        sim.store.bulk_load(objects)
        load_s = time.perf_counter() - t0
        core = client.CoreV1Api(sim.api_client())
        pod_names = [
            (o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects if o["kind"] == "Pod"
        ]
        print(f"loaded {len(objects)} objects in {load_s:.1f}s")

        rates = []
        for _ in range(args.runs):
            pages, items, secs = list_all_pages(core, args.limit)
            rates.append(pages / secs)
        print(
            f"list: {items} pods in {pages} pages of {args.limit}: "
            f"median {statistics.median(rates):.1f} pages/s "
            f"(runs: {', '.join(f'{r:.1f}' for r in rates)})"
        )

        replay, live = [], []
        for _ in range(args.runs):
            rv = str(sim.store.resource_version)
            burst(sim, pod_names, args.events)
            replay.append(args.events / read_events(core, rv, args.events))
            rv = str(sim.store.resource_version)
            writer = threading.Thread(target=burst, args=(sim, pod_names, args.events))
            writer.start()
            live.append(args.events / read_events(core, rv, args.events))
            writer.join()
        print(
            f"watch replay: median {statistics.median(replay):.0f} events/s "
            f"(runs: {', '.join(f'{r:.0f}' for r in replay)})"
        )
        print(
            f"watch live (writer in the same process): median {statistics.median(live):.0f} events/s "
            f"(runs: {', '.join(f'{r:.0f}' for r in live)})"
        )


if __name__ == "__main__":
    main()
