"""The admission loop's cost, in process: one run of `run_admission_loop` over a backlog of pending
requests (as after a quota raise or a wave of releases), alternating rounds between two checkouts.

The loop phase of admission_http.py runs once per seeded database, so a neighbour's load moves its
figure by a third between runs; here each side is one long-lived process (its catalogue caches warm, as
a running worker's are) and the two take turns, ABBA, on the same database: each round inserts the
backlog (spread over the 100 cohorts as admission_http.py spreads it), times one loop run, then deletes
what it inserted and vacuums, so the next round starts from the same fleet. The fleet is the HTTP
benchmark's. Usage:

    .venv/bin/python benchmarks/admission_loop.py --compare-with REV --old-tree ../old --rounds 6
    .venv/bin/python benchmarks/admission_loop.py --profile  # this tree alone, under cProfile
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.ab_sides import Sides, fresh_fleet  # noqa: E402 - the path above


def serve(*, backlog: int, profile: bool) -> None:
    """One side: set up Django in the current directory's checkout, then answer each `round` line with
    the seconds one loop run took over a fresh backlog, what it admitted and the queries it made."""
    sys.path.insert(0, os.getcwd())
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")
    django.setup()
    import time

    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse
    from django.utils import timezone

    import quotas
    from quotas.models import CapacityRequest, Flavor, PriorityClass, Queue
    from quotas.runner.catalogue import catalogue_of
    from quotas.runner.inputs import cohort_root_path, micros
    from quotas.runner.loop import run_admission_loop

    flavor, batch = Flavor.objects.get(name="h100"), PriorityClass.objects.get(name="batch")
    queues = list(
        Queue.objects.select_related("tenant")
        .filter(tenant__slug__startswith="team-")
        .order_by("tenant__slug")
    )
    reverse("queues")
    for root_path in sorted({cohort_root_path(q.tenant.path) for q in queues}):
        catalogue_of(root_path=root_path, flavors=[flavor])

    shapes: Counter[str] = Counter()  # the statements of the last round, by their first words

    def one_round(profiler: Any = None) -> tuple[float, int, int]:
        order = micros(timezone.now())
        CapacityRequest.objects.bulk_create(
            [
                CapacityRequest(
                    tenant=q.tenant,
                    queue=q,
                    flavor=flavor,
                    priority_class=batch,
                    amounts={"nvidia.com/gpu": 1},
                    ge=1,
                    state="pending",
                    reason_code="submitted",
                    created_order=order + i,
                )
                for i, q in enumerate(queues[(i * 37) % len(queues)] for i in range(backlog))
            ]
        )
        connection.queries_log.clear()  # the log keeps 9,000 statements: a round's count must fit
        started = time.perf_counter()
        with CaptureQueriesContext(connection) as queries:
            if profiler is not None:
                profiler.enable()
            result = run_admission_loop()
            if profiler is not None:
                profiler.disable()
        took = time.perf_counter() - started
        shapes.clear()
        shapes.update(query["sql"][:40] for query in queries.captured_queries)
        CapacityRequest.objects.filter(created_order__gte=order).delete()
        with connection.cursor() as cursor:  # each round on tables without the last one's dead rows
            cursor.execute("VACUUM ANALYZE quotas_capacityrequest, quotas_requesttransition")
        return took, result["admitted"], len(queries.captured_queries)

    if profile:
        import cProfile
        import pstats

        one_round()  # warm
        profiler = cProfile.Profile()
        took, admitted, _ = one_round(profiler)
        print(f"{admitted} admitted in {took:.3f}s", file=sys.stderr)
        stats = pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative")
        stats.print_stats(45)
        stats.print_callees(os.environ.get("CALLEES", "readmit"))
        for shape, count in shapes.most_common():
            print(f"{count:6} {shape}", file=sys.stderr)
        return
    print("ready", Path(quotas.__file__).parent.parent, flush=True)
    for _ in sys.stdin:
        took, admitted, count = one_round()
        print(f"{took:.4f} {admitted} {count}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--compare-with", help="the git revision checked out in --old-tree")
    parser.add_argument("--old-tree", type=Path)
    parser.add_argument("--backlog", type=int, default=2000, help="pending requests per round")
    parser.add_argument("--rounds", type=int, default=6, help="per side, in ABBA order, after one warm-up")
    parser.add_argument("--profile", action="store_true", help="profile one round of this tree instead")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(backlog=args.backlog, profile=args.profile)
        return
    if not args.profile and not (args.compare_with and args.old_tree):
        parser.error("--compare-with REV and --old-tree PATH (REV checked out there) are both needed")
    env = fresh_fleet()
    common = ["--serve", "--backlog", str(args.backlog)]
    if args.profile:
        me = str(Path(__file__).resolve())
        subprocess.run([sys.executable, me, *common, "--profile"], cwd=REPO, env=env, check=True)
        return
    sides = Sides(script=__file__, argv=common, old_tree=args.old_tree, env=env)

    def one_round(label: str) -> tuple[float, int, int]:
        took, admitted, queries = sides.ask(label, "round")
        return float(took), int(admitted), int(queries)

    for label in ("before", "after"):
        one_round(label)  # warm-up, not counted
    results, loads = sides.turns(args.rounds, one_round)
    sides.close()
    print(
        f"{args.rounds} loop runs a side (ABBA) over {args.backlog} pending in 100 cohorts, after one each; "
        f"load average {min(loads):.1f}-{max(loads):.1f}"
    )
    rates = {}
    for label, runs in results.items():
        rates[label] = statistics.median(admitted / took for took, admitted, _ in runs)
        print(f"  {label}: decisions/s " + ", ".join(f"{admitted / took:.0f}" for took, admitted, _ in runs))
    print(
        f"median decisions/s: before {rates['before']:.0f}, after {rates['after']:.0f}, "
        f"ratio {rates['after'] / rates['before']:.2f}x; queries per run: before {results['before'][-1][2]}, "
        f"after {results['after'][-1][2]}"
    )


if __name__ == "__main__":
    main()
