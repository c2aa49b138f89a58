"""The monthly chargeback over the hourly ledger (DESIGN §10, issue 15): build a period's report from
--shares x --hours allocation rows (10,000 x 720 = 7.2M for the target), twice, and check that the
report lines and the CSV export are byte-identical; time, peak RSS of this process; no Prometheus.

The ledger goes into a dedicated database (created and migrated when missing) by set-based SQL on
the server (INSERT ... SELECT from generate_series, triggers and foreign-key checks off for the load:
session_replication_role = replica), not through the ORM. Each share holds 1 GE on a card of a node
of 8; nodes outnumber what shares hold by 1/5, so every pool has idle capacity; a rate card per GPU
model prices it, with a price change mid-month on one model (price segments split the hours).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gpuplatform_bench_metering \\
        .venv/bin/python benchmarks/metering_chargeback.py --shares 10000 --hours 720
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import sys
import time
import uuid
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")

POOLS = 40
TENANTS = 50
MODELS = ("H100-80GB", "A100-80GB", "L40S", "T4-16GB")


def ensure_database(url: str) -> None:
    import psycopg

    base, _, name = url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def load(shares: int, hours: int) -> str:
    """A fresh month of ledger for the benchmark; returns the period's id."""
    from datetime import UTC, datetime, timedelta
    from decimal import Decimal

    from django.db import connection

    from inventory.models import Cluster, NodePool
    from metering.models import BillingPeriod, RateCard
    from tenants.models import Tenant

    start = datetime(2025, 1, 1, tzinfo=UTC)
    with connection.cursor() as cur:
        cur.execute("SET session_replication_role = replica")  # no row triggers, no FK checks: a bulk load
        for table in (
            "metering_reportline",
            "metering_usagehour",
            "metering_capacityhour",
            "metering_adjustment",
        ):
            cur.execute(f"TRUNCATE {table} CASCADE")
        cur.execute("DELETE FROM metering_reportfile; DELETE FROM metering_reportjob;")
        cur.execute("DELETE FROM metering_billingperiod; DELETE FROM metering_ratecard;")
        cur.execute("SET session_replication_role = DEFAULT")
    period = BillingPeriod.objects.create(
        label="2025-01", starts_at=start, ends_at=start + timedelta(hours=hours), timezone="UTC"
    )
    cluster, _ = Cluster.objects.get_or_create(
        name="bench", defaults={"api_endpoint": "https://bench.example"}
    )
    pools = [NodePool.objects.get_or_create(cluster=cluster, name=f"pool-{i:02d}")[0] for i in range(POOLS)]
    root = Tenant.objects.filter(slug="bench-org").first() or Tenant.objects.create(
        slug="bench-org", display_name="Bench", path="/", depth=0
    )
    if root.path == "/":
        Tenant.objects.filter(pk=root.pk).update(path=f"/{root.pk.hex}/")
        root.refresh_from_db()
    teams = []
    for i in range(TENANTS):
        team = Tenant.objects.filter(slug=f"team-{i:02d}").first()
        if team is None:
            team = Tenant.objects.create(
                slug=f"team-{i:02d}", display_name=f"Team {i}", parent=root, depth=1, path="/"
            )
            Tenant.objects.filter(pk=team.pk).update(path=f"{root.path}{team.pk.hex}/")
        teams.append(team)
    for j, model in enumerate(MODELS):
        RateCard.objects.create(
            gpu_model=model,
            currency="USD",
            price_per_ge_hour=Decimal("2.5") - Decimal(j) / 2,
            effective_from=start,
        )
    # A price change mid-month on the first model: its hours are priced in two segments.
    first = RateCard.objects.get(gpu_model=MODELS[0])
    first.effective_to = start + timedelta(hours=hours // 2)
    first.save()
    RateCard.objects.create(
        gpu_model=MODELS[0],
        currency="USD",
        price_per_ge_hour=Decimal("2.75"),
        effective_from=first.effective_to,
    )
    # 8 cards a node, every pool with a fifth more cards than its shares hold (at least one node).
    per_pool = -(-shares // POOLS)
    nodes = POOLS * -(-(per_pool * 6 // 5) // 8)
    pool_ids = "ARRAY[" + ",".join(f"'{p.pk}'::uuid" for p in pools) + "]"
    team_ids = "ARRAY[" + ",".join(f"'{t.pk}'::uuid" for t in teams) + "]"
    models = "ARRAY[" + ",".join(f"'{m}'" for m in MODELS) + "]"
    with connection.cursor() as cur:
        cur.execute("SET session_replication_role = replica")
        cur.execute(
            f"""
            INSERT INTO metering_usagehour (cluster_id, period_id, hour, share_key, meter, allocation_id,
                tenant_id, namespace, pool_id, pool_name, node_name, card_key, gpu_model, flavor_name,
                resource_name, ge, seconds, quantity, card_hours, attribution, source, samples_seen,
                samples_expected, complete, computed_at)
            SELECT %s, %s, %s::timestamptz + make_interval(hours => h), 'share-' || s,
                'allocated_ge_hours', NULL,
                ({team_ids})[1 + s %% {TENANTS}], 'ns-' || (s %% {TENANTS}),
                ({pool_ids})[1 + s %% {POOLS}], 'pool-' || lpad((s %% {POOLS})::text, 2, '0'),
                'node-' || (s / 8), 'card-' || s, ({models})[1 + (s %% {POOLS}) %% {len(MODELS)}], '',
                'nvidia.com/gpu',
                1, CASE WHEN (s + h) %% 10 = 0 THEN 1800 ELSE 3600 END,
                CASE WHEN (s + h) %% 10 = 0 THEN 0.5 ELSE 1 END,
                CASE WHEN (s + h) %% 10 = 0 THEN 0.5 ELSE 1 END,
                'allocation', 'ledger', 0, 0, true, now()
            FROM generate_series(0, %s - 1) AS h, generate_series(0, %s - 1) AS s
            """,
            [cluster.pk, period.pk, start, hours, shares],
        )
        # What the shares hold per pool-hour, in one pass; then capacity per node-hour (8 cards), the
        # pool's idle (cards - held) on its first node (n < POOLS), so per pool charged + idle = cards.
        cur.execute(
            """
            CREATE TEMP TABLE bench_held AS SELECT pool_id, hour, sum(card_hours) AS held
            FROM metering_usagehour WHERE period_id = %s GROUP BY pool_id, hour
            """,
            [period.pk],
        )
        cur.execute(
            f"""
            INSERT INTO metering_capacityhour (cluster_id, period_id, hour, node_name, pool_id, pool_name,
                gpu_model, cards, card_hours, idle_card_hours, computed_at)
            SELECT %s, %s, t.hour, 'cap-node-' || n, p.pool_id, 'pool-' || lpad((n %% {POOLS})::text, 2, '0'),
                ({models})[1 + (n %% {POOLS}) %% {len(MODELS)}], 8, 8,
                CASE WHEN n < {POOLS} THEN p.cards - coalesce(b.held, 0) ELSE 0 END, now()
            FROM generate_series(0, %s - 1) AS h
            CROSS JOIN LATERAL (SELECT %s::timestamptz + make_interval(hours => h) AS hour) AS t
            CROSS JOIN generate_series(0, %s - 1) AS n
            CROSS JOIN LATERAL (
                SELECT ({pool_ids})[1 + n %% {POOLS}] AS pool_id,
                    8 * ((%s - 1 - n %% {POOLS}) / {POOLS} + 1) AS cards
            ) AS p
            LEFT JOIN bench_held b ON b.pool_id = p.pool_id AND b.hour = t.hour AND n < {POOLS}
            """,
            [cluster.pk, period.pk, hours, start, nodes, nodes],
        )
        cur.execute("DROP TABLE bench_held")
        cur.execute("SET session_replication_role = DEFAULT")
        cur.execute("ANALYZE metering_usagehour; ANALYZE metering_capacityhour")
    return str(period.pk)


# Sockets this process opens (Python's audit events): an HTTP call to Prometheus, or any other, would
# show here; libpq's connection to PostgreSQL is made in C and does not.
CONNECTS: list[object] = []


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event == "socket.connect":
        CONNECTS.append(args[1])


def run_once(period_id: str) -> tuple[float, str, str, int]:
    """One build, timed; the digest covers the lines' CSV export and the stored summary (the
    reconciliation and roll-ups), so "byte-identical" speaks for the whole report."""
    from metering.exports.formats import csv_chunks
    from metering.exports.lines import export_lines
    from metering.models import ReportLine
    from metering.services.reports import build_period_report

    began = time.perf_counter()
    period = build_period_report(period_id=uuid.UUID(period_id), idle="distributed")
    took = time.perf_counter() - began
    digest = hashlib.sha256()
    for chunk in csv_chunks(export_lines(ReportLine.objects.filter(period=period))):
        digest.update(chunk)
    digest.update(json.dumps(period.summary, sort_keys=True).encode())
    recon = period.summary["reconciliation"]
    for r in recon:  # per pool: charged + idle card-hours = cards x hours, exactly
        assert Decimal(r["charged_card_hours"]) + Decimal(r["idle_card_hours"]) == Decimal(r["card_hours"]), r
        assert r["holds"], r  # the rounded lines + the residue shown = cards x hours x price rounded once
    residue = sum(abs(float(r["residue"])) for r in recon)
    return (
        took,
        digest.hexdigest(),
        f"{len(recon)} pools, residue total {residue:.2f}",
        ReportLine.objects.filter(period=period).count(),
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shares", type=int, default=10_000)
    parser.add_argument("--hours", type=int, default=720)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="build over the ledger a previous run loaded (its --shares and --hours), skipping the load",
    )
    args = parser.parse_args()
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        sys.exit("set DATABASE_URL to a dedicated PostgreSQL database (it is emptied)")
    ensure_database(url)
    import django

    django.setup()
    from django.core.management import call_command

    from metering.models import BillingPeriod, UsageHour

    call_command("migrate", verbosity=0, interactive=False)
    began = time.perf_counter()
    period = BillingPeriod.objects.filter(label="2025-01").first() if args.reuse else None
    period_id = str(period.pk) if period else load(args.shares, args.hours)
    rows = UsageHour.objects.filter(period_id=uuid.UUID(period_id)).count()
    print(f"ledger: {rows:,} usage rows ({time.perf_counter() - began:.1f} s to load and count)", flush=True)
    sys.addaudithook(_audit)
    results = [run_once(period_id) for _ in range(args.runs)]
    for took, digest, recon, lines in results:
        print(f"build: {took:.2f} s, {lines} lines, csv+summary sha256 {digest[:16]}, {recon}", flush=True)
    times = sorted(r[0] for r in results)
    same = len({r[1] for r in results}) == 1
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"median {times[len(times) // 2]:.2f} s; byte-identical: {same}; peak RSS {peak:.0f} MiB")
    print(f"sockets opened while building and hashing: {CONNECTS or 'none'}")


if __name__ == "__main__":
    main()
