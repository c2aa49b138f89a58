"""Hourly metering from a backfilled Prometheus (DESIGN §10: 10,000 shares on 40,000 GPUs, <= 60 s per
hour of data, every query <= 5M samples).

Generates one hour (plus edges) of DCGM series for every card at a 60 s scrape: utilisation
(PROF_GR_ENGINE_ACTIVE), memory (FB_USED) and the energy counter, with pod labels on the cards a share
holds; backfills them with promtool, serves them with the Debian prometheus binary, seeds the matching
inventory (nodes, cards with UUIDs, one allocation per share) in PostgreSQL, and times
``meter_usage_hour`` end to end (queries, attribution, rows written), reading Prometheus' own count of
the samples each query touched (``stats=all``). Usage:

    .venv/bin/python benchmarks/metering_prom.py --nodes 5000 --gpus-per-node 8 --shares 10000 --rounds 3
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DB = "gpuplatform_bench_metering"
os.environ.setdefault("DATABASE_URL", f"postgres://postgres@127.0.0.1:5432/{DB}")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")

HOUR = datetime(2025, 3, 10, 10, tzinfo=UTC)
STEP = 60


def uuid_of(node: int, gpu: int) -> str:
    digest = hashlib.sha256(f"{node}/{gpu}".encode()).hexdigest()
    return f"GPU-{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def write_series(path: Path, *, nodes: int, per_node: int, shares: int) -> int:
    """Stream OpenMetrics for every card, family by family (the format wants families together)."""
    times = [HOUR.timestamp() + m * STEP for m in range(-2, 63)]
    lines = 0
    with path.open("w") as out:
        for name, value in (
            # Busy cards (held by a share) work; the others idle at 0 but still draw power.
            ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", lambda i, m: 0.25 + (i % 4) * 0.125 if i < shares else 0.0),
            ("DCGM_FI_DEV_FB_USED", lambda i, m: 1024.0 * (i % 64) if i < shares else 0.0),
            ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", lambda i, m: 1e9 + (m + 2) * 300 * STEP * 1000.0),
        ):
            out.write(f"# TYPE {name} gauge\n")
            for n in range(nodes):
                for g in range(per_node):
                    i = n * per_node + g
                    labels = f'Hostname="node-{n}",UUID="{uuid_of(n, g)}",device="nvidia{g}",gpu="{g}"'
                    if i < shares:
                        labels += f',container="main",namespace="team-{i % 100}",pod="job-{i}"'
                    for m, t in enumerate(times):
                        out.write(f"{name}{{{labels}}} {value(i, m)!r} {t:.0f}\n")
                        lines += 1
        out.write("# EOF\n")
    return lines


def seed_inventory(*, nodes: int, per_node: int, shares: int) -> str:
    from decimal import Decimal

    from inventory.crypto import encrypt_text
    from inventory.models import Allocation, Cluster, Gpu, Node, NodePool

    cluster = Cluster.objects.create(
        name="bench", api_endpoint="https://bench.invalid", kubeconfig_encrypted=encrypt_text("x")
    )
    pool = NodePool.objects.create(cluster=cluster, name="h100")
    node_rows = Node.objects.bulk_create(
        [
            Node(cluster=cluster, pool=pool, name=f"node-{n}", model_key="H100-80GB", gpu_count=per_node)
            for n in range(nodes)
        ],
        batch_size=2000,
    )
    Gpu.objects.bulk_create(
        [
            Gpu(node=node, index=g, uuid=uuid_of(n, g), model_key="H100-80GB")
            for n, node in enumerate(node_rows)
            for g in range(per_node)
        ],
        batch_size=5000,
    )
    Allocation.objects.bulk_create(
        [
            Allocation(
                cluster=cluster, namespace=f"team-{i % 100}", holder_kind="Pod", holder_name=f"job-{i}",
                holder_uid=f"uid-{i}", unit_key="nvidia.com/gpu", resource_name="nvidia.com/gpu",
                ge=Decimal(1), model_key="H100-80GB", node=node_rows[i // per_node],
                node_name=f"node-{i // per_node}", pool=pool, started_at=HOUR - timedelta(hours=1),
            )
            for i in range(shares)
        ],
        batch_size=5000,
    )  # fmt: skip
    return str(cluster.pk)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--shares", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--budget", type=int, default=5_000_000)
    args = parser.parse_args()
    env = {**os.environ}
    subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", DB], check=True)
    subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", DB], check=True)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=REPO, env=env, check=True)

    import django

    django.setup()
    from metering.collection.config import SourceConfig
    from metering.prom import PrometheusUsageSource
    from metering.services.collection import build_plan, meter_usage_hour
    from tests.metering.prometheus import PrometheusServer

    work = Path(tempfile.mkdtemp(prefix="metcol-bench-"))
    source_file = work / "series.om"
    t = time.perf_counter()
    lines = write_series(source_file, nodes=args.nodes, per_node=args.gpus_per_node, shares=args.shares)
    generated = time.perf_counter() - t
    t = time.perf_counter()
    server = PrometheusServer([], source=source_file).start()
    backfilled = time.perf_counter() - t
    source_file.unlink()
    cluster_id = seed_inventory(nodes=args.nodes, per_node=args.gpus_per_node, shares=args.shares)
    try:
        source = PrometheusUsageSource(
            url=server.url, config=SourceConfig(sample_budget=args.budget, timeout_seconds=600)
        )
        plan, _ = build_plan(cluster_id=uuid.UUID(cluster_id), hour=HOUR)
        walls, reads, results = [], [], []
        for _ in range(args.rounds):
            t = time.perf_counter()
            source.read_hour(plan=plan)
            reads.append(time.perf_counter() - t)
            t = time.perf_counter()
            done = meter_usage_hour(
                cluster_id=uuid.UUID(cluster_id), hour=HOUR, now=HOUR + timedelta(days=1), source=source
            )
            walls.append(time.perf_counter() - t)
            results.append(done)
        last = results[-1]
        cards = args.nodes * args.gpus_per_node
        print(f"cards {cards}, shares {args.shares}, samples backfilled {lines:,}")
        print(f"generate {generated:.1f} s, promtool backfill + start {backfilled:.1f} s")
        print(f"read_hour (queries only): median {statistics.median(reads):.2f} s over {args.rounds}")
        print(f"meter_usage_hour end to end: median {statistics.median(walls):.2f} s over {args.rounds}")
        print(f"queries {last.queries}, rows {last.rows}, complete {last.complete}, error {last.error!r}")
        print(f"max samples in one query (Prometheus stats): {last.max_query_samples:,}")
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
