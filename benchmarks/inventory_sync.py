"""Inventory sync against a large kubesim cluster (DESIGN §10): cold sync time, peak RSS of the sync
process, and the rate at which watch events are applied.

kubesim runs in its own process (`python -m kubesim ... --kubeconfig F`), so this process is the sync
process alone and its peak RSS is the figure. Needs PostgreSQL (DATABASE_URL); the database named there
is created and migrated when missing, and the benchmark's cluster is replaced on each run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gpuplatform_bench \\
        .venv/bin/python benchmarks/inventory_sync.py --nodes 5000 --events 20000

Steady watch rate: after the cold sync, --events pod label patches are written through the API, then a
watch resumes from the list's resourceVersion and the seconds to apply the backlog are measured
(events applied per second by the single writer, batches of up to 1,000 in one transaction each).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")


def ensure_database(url: str) -> None:
    import psycopg

    base, _, name = url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def start_kubesim(nodes: int, seed: int, kubeconfig: Path, history: int) -> subprocess.Popen[bytes]:
    command = [
        sys.executable,
        "-m",
        "kubesim",
        "--scenario",
        "mixed",
        "--nodes",
        str(nodes),
        "--seed",
        str(seed),
        "--kubeconfig",
        str(kubeconfig),
        "--no-controllers",
        "--history-window",
        str(history),
    ]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 900
    while not kubeconfig.exists() or kubeconfig.stat().st_size == 0:
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(
                f"kubesim did not start: {process.stderr.read().decode()[-2000:] if process.stderr else ''}"
            )
        time.sleep(0.5)
    return process


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_events(api: Any, pods: list[tuple[str, str]], count: int, threads: int = 4) -> float:
    from kubernetes import client

    core = client.CoreV1Api(api)
    started = time.monotonic()

    def work(offset: int) -> None:
        for i in range(offset, count, threads):
            namespace, name = pods[i % len(pods)]
            core.patch_namespaced_pod(
                name,
                namespace,
                {"metadata": {"labels": {"bench": str(i)}}},
                _content_type="application/merge-patch+json",
                _preload_content=False,
            )

    workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--page-size", type=int, default=500)
    args = parser.parse_args()
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        raise SystemExit("set DATABASE_URL to a PostgreSQL database (created when missing)")
    ensure_database(url)

    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from gpuplatform.accounts.models import PlatformRole, User
    from inventory import kube
    from inventory.models import Allocation, Cluster, Gpu, Node, ResourceClaim, ShareableUnit
    from inventory.services import create_cluster
    from inventory.sync.runner import ClusterSync

    workdir = Path(tempfile.mkdtemp(prefix="inventory-bench-"))
    kubeconfig = workdir / "kubeconfig"
    t0 = time.monotonic()
    sim = start_kubesim(args.nodes, args.seed, kubeconfig, history=args.events + 10_000)
    kubesim_start = time.monotonic() - t0
    try:
        admin, _ = User.objects.get_or_create(
            username="bench-admin", defaults={"platform_role": PlatformRole.PLATFORM_ADMIN}
        )
        old = Cluster.objects.filter(name="bench").first()
        if old is not None:
            Allocation.objects.filter(cluster=old).delete()
            old.delete()
        cluster = create_cluster(actor=admin, name="bench", kubeconfig=kubeconfig.read_text())
        rss_before = peak_rss_mib()

        started = time.monotonic()
        syncer = ClusterSync(cluster, page_size=args.page_size)
        report = syncer.full_sync()
        cold = time.monotonic() - started
        per_kind = dict(syncer.timings)
        rss_cold = peak_rss_mib()

        # Steady watch: a backlog of pod changes, applied from the list's resourceVersion.
        pods = [
            (p.namespace, p.holder_name)
            for p in Allocation.objects.filter(cluster=cluster, holder_kind="Pod", ended_at__isnull=True)[
                :5000
            ]
        ]
        write_seconds = write_events(syncer.api, pods, args.events)
        applied, started = 0, time.monotonic()
        syncer._start_reader("pods")
        deadline = started + 600
        while applied < args.events and time.monotonic() < deadline:
            batch = syncer._next_batch()
            syncer.apply_batch(batch)
            applied += sum(
                1 for _, _, item in batch if isinstance(item, kube.WatchEvent) and item.type != "BOOKMARK"
            )
        watch_seconds = time.monotonic() - started
        syncer.stop_event.set()
        result = {
            "nodes": Node.objects.filter(cluster=cluster).count(),
            "gpus": Gpu.objects.filter(node__cluster=cluster).count(),
            "units": ShareableUnit.objects.filter(cluster=cluster).count(),
            "claims": ResourceClaim.objects.filter(cluster=cluster).count(),
            "pods_listed": report.objects.get("pods"),
            "open_allocations": Allocation.objects.filter(cluster=cluster, ended_at__isnull=True).count(),
            "kubesim_start_s": round(kubesim_start, 1),
            "cold_sync_s": round(cold, 1),
            "cold_sync_s_per_kind": {kind: round(seconds, 1) for kind, seconds in per_kind.items()},
            "peak_rss_mib_before_sync": round(rss_before),
            "peak_rss_mib": round(rss_cold),
            "events_written": args.events,
            "events_write_s": round(write_seconds, 1),
            "events_applied": applied,
            "events_applied_per_s": round(applied / watch_seconds) if watch_seconds else None,
        }
        print(json.dumps(result, indent=2))
    finally:
        sim.terminate()
        sim.wait(timeout=30)


if __name__ == "__main__":
    main()
