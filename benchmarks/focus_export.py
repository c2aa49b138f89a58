"""FOCUS export streamed (DESIGN §10, issues 15 and 32), 1.2 or 1.3 (``--focus``): --lines report
lines written as FOCUS CSV through the same generators the API streams (metering.exports), lines per
second and this process's memory along the way (flat: one chunk of rows at a time).

Two measures: ``pure``, the formatter alone over generated rows (no database); ``db``, end to end from
PostgreSQL: --lines report lines loaded into a dedicated database by INSERT ... SELECT from
generate_series (the closed-period trigger off for the load), read back by a server-side cursor in
chunks (export_lines), formatted, and the bytes hashed as a client would receive them.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gpuplatform_bench_metering \\
        .venv/bin/python benchmarks/focus_export.py --lines 1000000 --mode db
    .venv/bin/python benchmarks/focus_export.py --focus 1.3 --mode pure --lines 20000 --runs 3
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from metering.exports.rows import ExportLine

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")


def rss_mib() -> float:
    """Resident set size now (not the peak), from /proc: what "flat" is checked against."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def generated(n: int) -> Iterator[ExportLine]:
    from metering.exports.rows import ExportLine

    start, end = datetime(2025, 1, 1, tzinfo=UTC), datetime(2025, 2, 1, tzinfo=UTC)
    for i in range(n):
        yield ExportLine(
            period="2025-01", period_start=start, period_end=end, line_no=i + 1, kind="charge",
            tenant_id=f"00000000-0000-0000-0000-{i % 5000:012d}", tenant_slug=f"team-{i % 5000}",
            tenant_path=f"/org/dept-{i % 50}/team-{i % 5000}/", cost_centre=f"CC-{i % 500}",
            pool=f"east/pool-{i % 40}", flavor="h100", gpu_model="H100-80GB", basis="allocation",
            currency="USD", unit_price=Decimal("2.500000"), ge_hours=Decimal("719.500000000"),
            used_ge_hours=None, card_hours=Decimal("719.500000000"),
            amount_exact=Decimal("1798.750000000000"), amount=Decimal("1798.7500"), rate_card="r-1",
        )  # fmt: skip


def load_lines(n: int) -> str:
    from django.db import connection

    from metering.models import BillingPeriod

    start = datetime(2024, 12, 1, tzinfo=UTC)
    period = BillingPeriod.objects.filter(label="2024-12").first()
    if period is not None and period.lines.count() == n:
        return str(period.pk)
    with connection.cursor() as cur:
        cur.execute("SET session_replication_role = replica")
        if period is not None:
            cur.execute("DELETE FROM metering_reportline WHERE period_id = %s", [period.pk])
        else:
            period = BillingPeriod.objects.create(
                label="2024-12", starts_at=start, ends_at=datetime(2025, 1, 1, tzinfo=UTC), timezone="UTC"
            )
        cur.execute(
            """
            INSERT INTO metering_reportline (period_id, line_no, kind, tenant_id, tenant_path, tenant_slug,
                cost_centre, pool_name, flavor_name, gpu_model, currency, unit_price, ge_hours, card_hours,
                amount_exact, amount, adjusts, basis, used_ge_hours, rate_card_ref, note)
            SELECT %s, i, 'charge', NULL, '/org/team-' || (i %% 5000) || '/', 'team-' || (i %% 5000),
                'CC-' || (i %% 500), 'east/pool-' || (i %% 40), 'h100', 'H100-80GB', 'USD', 2.5,
                719.5, 719.5, 1798.75, 1798.75, '', 'allocation', NULL, 'r-1', ''
            FROM generate_series(1, %s) AS i
            """,
            [period.pk, n],
        )
        cur.execute("SET session_replication_role = DEFAULT")
        cur.execute("ANALYZE metering_reportline")
    return str(period.pk)


def stream(chunks: Iterator[bytes], n: int) -> tuple[float, float, str, list[float]]:
    digest = hashlib.sha256()
    samples: list[float] = []
    began, cpu = time.perf_counter(), time.process_time()
    seen = 0
    for chunk in chunks:
        digest.update(chunk)
        seen += chunk.count(b"\n")
        if len(samples) < seen * 10 // (n + 1):  # RSS at each tenth of the way
            samples.append(rss_mib())
    return time.perf_counter() - began, time.process_time() - cpu, digest.hexdigest(), samples


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--mode", choices=("pure", "db"), default="db")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--focus", choices=("1.2", "1.3"), default="1.2", help="the FOCUS version written")
    parser.add_argument(
        "--path",
        choices=("export", "python"),
        default="export",
        help="db mode: what the API streams (focus_export: COPY on PostgreSQL), or the Python formatter",
    )
    args = parser.parse_args()
    import django

    if args.mode == "db":
        url = os.environ.get("DATABASE_URL", "")
        if not url.startswith("postgres"):
            sys.exit("set DATABASE_URL to a dedicated PostgreSQL database")
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from metering_chargeback import ensure_database

        ensure_database(url)
    django.setup()
    from metering.exports.focus import focus_chunks
    from metering.exports.focus13 import focus13_chunks

    def python_chunks(lines: Iterator[ExportLine]) -> Iterator[bytes]:
        return focus13_chunks(lines) if args.focus == "1.3" else focus_chunks(lines)

    if args.mode == "db":
        from django.core.management import call_command

        from metering.exports.lines import export_lines
        from metering.models import ReportLine

        call_command("migrate", verbosity=0, interactive=False)
        period_id = load_lines(args.lines)

        from metering.exports.focus_sql import focus_export

        try:  # where each line sat, per node (issue 32); absent from trees before it
            from metering.services.node_split import node_weights as weights
        except ImportError:
            weights = None  # type: ignore[assignment]

        def source() -> Iterator[bytes]:
            lines = ReportLine.objects.filter(period_id=uuid.UUID(period_id))
            if args.path == "export" and args.focus == "1.3" and weights is not None:
                return focus_export(lines, version="1.3", nodes=weights(lines))  # as the API does
            if args.path == "export":
                return focus_export(lines, version=args.focus)
            return python_chunks(export_lines(lines))
    else:

        def source() -> Iterator[bytes]:
            return python_chunks(generated(args.lines))

    label = (f"db/{args.path}" if args.mode == "db" else "pure") + f" FOCUS {args.focus}"
    rates, cpu_rates, digests = [], [], set()
    for _ in range(args.runs):
        before = rss_mib()
        took, cpu, digest, samples = stream(source(), args.lines)
        rates.append(args.lines / took)
        cpu_rates.append(args.lines / cpu)
        digests.add(digest)
        print(
            f"{label}: {args.lines:,} lines in {took:.1f} s = {args.lines / took:,.0f} lines/s "
            f"({args.lines / cpu:,.0f} per CPU-second of this process); "
            f"RSS before {before:.0f} MiB, at each tenth {', '.join(f'{s:.0f}' for s in samples)} MiB",
            flush=True,
        )
    rates.sort()
    cpu_rates.sort()
    print(
        f"median {rates[len(rates) // 2]:,.0f} lines/s wall, {cpu_rates[len(cpu_rates) // 2]:,.0f} lines per "
        f"CPU-second; identical bytes on every run: {len(digests) == 1} (sha256 {min(digests)[:16]}…); "
        f"load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
