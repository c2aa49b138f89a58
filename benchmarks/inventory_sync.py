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

Event to committed row: then every kind is watched while another process creates GPU pods at
--latency-rate per second for --latency-seconds, each stamped with its write time, and a process of
its own polls this process's database for each pod's committed interval (P50/P99 of write -> row
visible): the driver and its poller are benchmarks/sync_latency.py.

Event to committed row while a resync runs: the same pods at the same rate while the periodic full
resync runs (as ClusterSync.run does it, in the writer's thread): P50/P99/max of the pods written
between the resync's start and end, and the resync's own wall time and drift. Before the resync ran
with the watches applying nothing until it ended; --resync-latency-seconds 0 leaves the phase out.

Kueue Workloads: --workloads N makes the cluster enforce by Kueue (kubesim with Kueue's CRDs) and
loads N Workloads shaped as Kueue writes them (benchmarks/sync_workloads.py), so the cold sync lists
the sixth kind; 0 (the default) keeps the ResourceQuota cluster of the figures recorded before.

With --compare-with REV, the same measurement runs alternately on the code of REV (checked out beside
in a git worktree, its own database) and on this tree, --rounds times each, and every figure's runs,
medians and the ratio after/before are printed with the load average at the start of each run: on a
shared machine a ratio from alternating runs says more than either figure alone.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
ROOT = HERE  # the tree whose code is measured (--tree), put on sys.path in main()
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")
# kubesim serves on 127.0.0.1, which the service refuses unless told (as the demo and the suite do).
os.environ.setdefault("CLUSTER_ALLOW_LOOPBACK", "1")


def ensure_database(url: str, *, fresh: bool = False) -> None:
    """Create the database when missing; with ``fresh``, drop it first.

    Why fresh: deleting the last run's cluster and vacuuming left the inventory tables empty *and*
    vacuumed (pg_class says 0 rows), so the sync's connection planned PostgreSQL's foreign-key
    checks as sequential scans of tables that then grew to 100,000 rows: each page's COMMIT took
    seconds and the 5,000-node claims list 150-250 s, in the old code and the new alike. A new
    database's tables have never been vacuumed, and the planner takes them as unknown, not empty."""
    import psycopg

    base, _, name = url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if fresh:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_kubesim(
    nodes: int, seed: int, kubeconfig: Path, history: int, tree: Path, objects: Path | None = None
) -> subprocess.Popen[bytes]:
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
        "--port",
        str(free_port()),  # not 6443: another benchmark on this machine may hold it
    ]
    if objects is not None:
        command += ["--kueue", "--objects", str(objects)]
    process = subprocess.Popen(command, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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


def process_cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) of another process on this machine (kubesim, the sync's PostgreSQL
    backend), or None where /proc does not say."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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


def _figures(result: dict[str, Any]) -> dict[str, float]:
    """The figures compared: flat numbers, per-kind seconds as ``cold_sync_s.<kind>``."""
    flat: dict[str, float] = {}
    for key, value in result.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float):
            flat[key] = value
        elif key == "cold_sync_s_per_kind":
            flat.update({f"cold_sync_s.{kind}": seconds for kind, seconds in value.items()})
    return flat


def compare(args: argparse.Namespace, url: str) -> None:
    old_tree = Path(tempfile.gettempdir()) / f"inventory-bench-{args.compare_with}"
    if not old_tree.exists():
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(old_tree), args.compare_with], cwd=HERE, check=True
        )
    base = url.rpartition("/")[0]
    name = url.rpartition("/")[2]
    trees = {"before": (old_tree, f"{base}/{name}_before"), "after": (HERE, f"{base}/{name}_after")}
    passed = [
        f"--{flag}={value}"
        for flag, value in (
            ("nodes", args.nodes),
            ("seed", args.seed),
            ("events", args.events),
            ("page-size", args.page_size),
            ("latency-rate", args.latency_rate),
            ("latency-seconds", args.latency_seconds),
            ("resync-latency-seconds", args.resync_latency_seconds),
            ("workloads", args.workloads),
        )
        if value is not None
    ]
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    for _ in range(args.rounds):
        for label, (tree, database) in trees.items():
            command = [sys.executable, str(Path(__file__).resolve()), "--tree", str(tree), "--json", *passed]
            if not args.fresh_database:
                command.append("--reuse-database")
            out = subprocess.run(
                command,
                env={**os.environ, "DATABASE_URL": database},
                capture_output=True,
                text=True,
                check=False,
            )
            if out.returncode != 0:
                raise SystemExit(f"{label} failed:\n{out.stderr[-3000:]}")
            result = json.loads(out.stdout.strip().splitlines()[-1])
            runs[label].append(result)
            print(f"{label}: {json.dumps(result)}", file=sys.stderr, flush=True)
    figures = [_figures(r) for r in runs["before"] + runs["after"]]
    summary: dict[str, Any] = {
        "before": args.compare_with,
        "rounds": args.rounds,
        "load_average_start": {
            label: [r["load_average_start"][0] for r in results] for label, results in runs.items()
        },
    }
    for key in figures[0]:
        before = [_figures(r).get(key) for r in runs["before"]]
        after = [_figures(r).get(key) for r in runs["after"]]
        if any(v is None for v in before + after):
            continue
        b, a = statistics.median(before), statistics.median(after)  # type: ignore[type-var]
        summary[key] = {
            "before": before,
            "after": after,
            "median_before": b,
            "median_after": a,
            "ratio_after_before": round(a / b, 3) if b else None,
        }
    print(json.dumps(summary, indent=1))


def write_workloads(directory: Path, count: int, *, seed: int) -> None:
    """The Workloads as a file for kubesim's --objects (loaded with the scenario: creating them
    through the API, each validated against Kueue's 1.4 MB schema, took ~90 ms apiece)."""
    from kubesim.scenarios.cluster_objects import DEFAULT_TENANT_NAMESPACES

    made = _bench_module("sync_workloads").workload_objects(
        count=count, namespaces=list(DEFAULT_TENANT_NAMESPACES), seed=seed
    )
    directory.mkdir()
    (directory / "workloads.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": made}))


def _bench_module(name: str) -> Any:
    """benchmarks/<name>.py of this checkout, by its path: the measured tree (--tree) is first on
    sys.path, and an older one has no such module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Under its name, so that what it hands a spawned process (sync_latency's functions) is found
    # there by it: this directory is on the benchmark's sys.path.
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--page-size", type=int, default=500)
    parser.add_argument("--profile", help="write a cProfile of the cold sync to this file")
    parser.add_argument("--latency-rate", type=float, default=200.0, help="pods created per second")
    parser.add_argument("--latency-seconds", type=float, default=30.0)
    parser.add_argument(
        "--resync-latency-seconds",
        type=float,
        default=None,
        help="how long pods are written around the resync (default: 1.5 x the cold sync + 10 s; 0: no phase)",
    )
    parser.add_argument(
        "--workloads", type=int, default=0, help="Kueue Workloads in the cluster (Kueue backend)"
    )
    parser.add_argument("--tree", help="measure the code of this checkout (default: this one)")
    parser.add_argument("--compare-with", help="a git revision measured alternately beside this tree")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each side with --compare-with")
    parser.add_argument("--json", action="store_true", help="print the result on one line")
    parser.add_argument(
        "--reuse-database",
        dest="fresh_database",
        action="store_false",
        help="keep the database between runs (delete the last cluster and vacuum) instead of a new one",
    )
    args = parser.parse_args()
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        raise SystemExit("set DATABASE_URL to a PostgreSQL database (created when missing)")
    if args.compare_with:
        compare(args, url)
        return
    global ROOT
    ROOT = Path(args.tree).resolve() if args.tree else HERE
    sys.path.insert(0, str(ROOT))
    ensure_database(url, fresh=args.fresh_database)

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
    # The resync phase's pods add to the watch history the latency phase's and the backlog's do.
    history = args.events + 10_000 + int(args.latency_rate * (args.latency_seconds + 400))
    objects = None
    if args.workloads:
        objects = workdir / "objects"
        write_workloads(objects, args.workloads, seed=args.seed)
    sim = start_kubesim(args.nodes, args.seed, kubeconfig, history=history, tree=ROOT, objects=objects)
    kubesim_start = time.monotonic() - t0
    try:
        admin, _ = User.objects.get_or_create(
            username="bench-admin", defaults={"platform_role": PlatformRole.PLATFORM_ADMIN}
        )
        old = Cluster.objects.filter(name="bench").first()
        if old is not None:
            Allocation.objects.filter(cluster=old).delete()
            old.delete()
        if not args.fresh_database:
            # The server runs with autovacuum off: without this, each run's index lookups wade
            # through the dead rows of every earlier run (same seed, same uids).
            from django.apps import apps
            from django.db import connection

            with connection.cursor() as cursor:
                for model in apps.get_app_config("inventory").get_models():
                    cursor.execute(f'VACUUM ANALYZE "{model._meta.db_table}"')
        cluster = create_cluster(actor=admin, name="bench", kubeconfig=kubeconfig.read_text())
        if args.workloads:
            # Set on the row, not through update_cluster: that would also compile and apply Kueue's
            # objects, which is the kueue_apply benchmark's business, not the sync's.
            Cluster.objects.filter(pk=cluster.pk).update(enforcement_backend="kueue")
            cluster.refresh_from_db()
            # The admission check's pass is a Celery worker's (queued when a Workload waits on it);
            # without a broker Celery runs it eagerly inside the sync, once per page: not the sync's
            # time. Both trees have the same receiver.
            from inventory.ports import kueue_check_pending

            kueue_check_pending.disconnect(dispatch_uid="kueue-check-pending")
        rss_before = peak_rss_mib()
        load_start = [round(x, 1) for x in os.getloadavg()]

        from django.db import connection as db_connection

        with db_connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            backend = cursor.fetchone()[0]
        others_started = {"postgres": process_cpu_s(backend), "kubesim": process_cpu_s(sim.pid)}
        started, cpu_started = time.monotonic(), time.process_time()
        syncer = ClusterSync(cluster, page_size=args.page_size)
        if args.profile:
            import cProfile

            with cProfile.Profile() as profiler:
                report = syncer.full_sync()
            profiler.dump_stats(args.profile)
        else:
            report = syncer.full_sync()
        cold, cold_cpu = time.monotonic() - started, time.process_time() - cpu_started
        # Where the rest of the wall time went: the other two processes on the same two cores.
        others_cpu = {
            name: round(now - before, 1)
            for name, pid in (("postgres", backend), ("kubesim", sim.pid))
            if (before := others_started[name]) is not None and (now := process_cpu_s(pid)) is not None
        }
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
                1 for q in batch if isinstance(q.item, kube.WatchEvent) and q.item.type != "BOOKMARK"
            )
        watch_seconds = time.monotonic() - started
        rss_backlog = peak_rss_mib()

        # Event to committed row: every kind watched, the single writer applying batches as in
        # ClusterSync.run, while another process creates GPU pods at a steady rate and times each
        # one from its write to its interval committed in this process's database.
        latency: dict[str, Any] = {}
        resync: dict[str, Any] = {}
        if args.latency_seconds > 0:
            from inventory.models import SyncKind

            latency_driver = _bench_module("sync_latency")
            for kind in syncer.kinds:  # Workloads only where the cluster enforces with Kueue
                if kind != SyncKind.PODS:
                    syncer._start_reader(kind)
            templates = list(
                Allocation.objects.filter(
                    cluster=cluster,
                    holder_kind="Pod",
                    ended_at__isnull=True,
                    resource_name__startswith="nvidia.com/",
                )
                .order_by("holder_uid")
                .values_list("namespace", "node_name", "resource_name", "count")[:2000]
            )
            out = workdir / "latency.json"
            driver = latency_driver.drive(
                args, kubeconfig, url, cluster, templates, args.latency_seconds, out
            )
            while driver.is_alive():
                syncer.apply_batch(syncer._next_batch())
            driver.join()
            latency = json.loads(out.read_text()) if out.exists() else {"latency": "driver failed"}
            latency.pop("samples", None)
            latency.pop("never_seen_written", None)
            if args.resync_latency_seconds != 0:
                resync = _bench_module("sync_resync").latency_during_resync(
                    latency_driver.drive,
                    latency_driver.percentiles,
                    args,
                    syncer,
                    kubeconfig,
                    url,
                    templates,
                    workdir,
                    cold,
                )
        syncer.stop_event.set()
        result = {
            "nodes": Node.objects.filter(cluster=cluster).count(),
            "gpus": Gpu.objects.filter(node__cluster=cluster).count(),
            "units": ShareableUnit.objects.filter(cluster=cluster).count(),
            "claims": ResourceClaim.objects.filter(cluster=cluster).count(),
            "pods_listed": report.objects.get("pods"),
            "open_allocations": Allocation.objects.filter(cluster=cluster, ended_at__isnull=True).count(),
            "kubesim_start_s": round(kubesim_start, 1),
            "load_average_start": load_start,
            "workloads": args.workloads,
            "cold_sync_s": round(cold, 1),
            # CPU seconds of this process alone (the sync's Python; not PostgreSQL's or kubesim's):
            # less at the mercy of the machine's load than the wall-clock figure.
            "cold_sync_cpu_s": round(cold_cpu, 1),
            # The same for the sync's PostgreSQL backend and for kubesim, during the cold sync.
            **{f"cold_sync_cpu_s_{name}": seconds for name, seconds in others_cpu.items()},
            "cold_sync_s_per_kind": {kind: round(seconds, 1) for kind, seconds in per_kind.items()},
            "peak_rss_mib_before_sync": round(rss_before),
            "peak_rss_mib": round(rss_cold),
            "events_written": args.events,
            "events_write_s": round(write_seconds, 1),
            "events_applied": applied,
            "events_applied_per_s": round(applied / watch_seconds) if watch_seconds else None,
            "peak_rss_mib_after_backlog": round(rss_backlog),
            **latency,
            **resync,
            "peak_rss_mib_end": round(peak_rss_mib()),
            "load_average_end": [round(x, 1) for x in os.getloadavg()],
        }
        print(json.dumps(result) if args.json else json.dumps(result, indent=2))
    finally:
        sim.terminate()
        sim.wait(timeout=30)


if __name__ == "__main__":
    main()
