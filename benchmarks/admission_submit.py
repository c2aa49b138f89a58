"""A submission's server-side cost, in process: the API view through Django's test client (every
middleware, authentication, throttles, the decision, the commit, the broker message and rendering),
with no HTTP server and no load generator beside it, alternating bursts between two checkouts.

The HTTP benchmark (admission_http.py) runs client, server and PostgreSQL on the same two cores, so a
neighbour's load moves its figures by a factor of two between runs; here each side is one long-lived
process (its caches warm, as a running worker's are) and the two take turns in short bursts, ABBA, so
drift in the machine's load and in the growing table falls on both alike. The fleet is the HTTP
benchmark's. Usage:

    .venv/bin/python benchmarks/admission_submit.py --compare-with REV --old-tree ../old --bursts 6
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.ab_sides import Sides, fresh_fleet  # noqa: E402 - the path above


def serve() -> None:
    """One side: set up Django in the current directory's checkout, then answer `burst N` lines
    with the mean milliseconds of N submissions (and the queries the last one made)."""
    sys.path.insert(0, os.getcwd())
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")
    django.setup()
    import secrets

    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from rest_framework.test import APIClient

    from gpuplatform.accounts.models import User
    from gpuplatform.accounts.tokens import issue_api_token

    pat = User.objects.get(username="pat")
    token = issue_api_token(actor=pat, name=f"submit-{secrets.token_hex(4)}", scopes=["read", "write"])
    client = APIClient(HTTP_AUTHORIZATION=f"Bearer {token.plaintext}")
    n = 0

    def submit() -> None:
        nonlocal n
        n += 1
        body = {"tenant": f"team-{n % 100}-{n % 9}", "flavor": "h100", "amount": 1}
        response = client.post("/api/v1/capacity-requests/", body, format="json")
        assert response.status_code == 201 and response.json()["state"] == "admitted", response.content

    import quotas

    print("ready", Path(quotas.__file__).parent.parent, flush=True)
    for line in sys.stdin:
        count = int(line.split()[1])
        started = time.perf_counter()
        for _ in range(count - 1):
            submit()
        with CaptureQueriesContext(connection) as queries:
            submit()
        took = (time.perf_counter() - started) * 1000 / count
        print(f"{took:.3f} {len(queries.captured_queries)}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--compare-with", help="the git revision checked out in --old-tree")
    parser.add_argument("--old-tree", type=Path)
    parser.add_argument("--warm", type=int, default=1000, help="submissions each side makes first")
    parser.add_argument("--submissions", type=int, default=200, help="per burst")
    parser.add_argument("--bursts", type=int, default=6, help="per side, in ABBA order")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    if not (args.compare_with and args.old_tree):
        parser.error("--compare-with REV and --old-tree PATH (REV checked out there) are both needed")
    env = fresh_fleet({"API_THROTTLE_RATE": "100000000/minute", "API_USER_THROTTLE_RATE": "100000000/minute"})
    sides = Sides(script=__file__, argv=["--serve"], old_tree=args.old_tree, env=env)

    def burst(label: str, count: int) -> tuple[float, int]:
        took, queries = sides.ask(label, f"burst {count}")
        return float(took), int(queries)

    for label in ("before", "after"):
        burst(label, args.warm)
    results, loads = sides.turns(args.bursts, lambda label: burst(label, args.submissions))
    sides.close()
    before = statistics.median(t for t, _ in results["before"])
    after = statistics.median(t for t, _ in results["after"])
    print(
        f"{args.bursts} bursts of {args.submissions} submissions a side (ABBA), after {args.warm} each; "
        f"load average {min(loads):.1f}-{max(loads):.1f}"
    )
    for label in results:
        print(f"  {label}: ms per submission " + ", ".join(f"{t:.1f}" for t, _ in results[label]))
    print(
        f"median ms per submission: before {before:.1f}, after {after:.1f}, ratio {before / after:.2f}x; "
        f"queries per submission: before {results['before'][-1][1]}, after {results['after'][-1][1]}"
    )


if __name__ == "__main__":
    main()
