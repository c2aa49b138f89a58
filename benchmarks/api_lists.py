"""API list latency: a page of 100 tenants at a steady request rate (DESIGN §10: P95 <= 150 ms at 100 req/s).

Runs against PostgreSQL and a real HTTP server: gunicorn with ``--workers`` processes (the production
server of deploy/Dockerfile), or Django's threaded runserver with ``--server runserver`` (as the demo
serves), with 1,000 tenants and a tenant-admin token whose subtree is the whole tree, so every
request goes through the scoping door. Usage:

    .venv/bin/python benchmarks/api_lists.py --rate 100 --seconds 20
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.serving import start_server  # the path above makes the repo importable

REPO = Path(__file__).resolve().parents[1]
DATABASE_URL = os.environ.get(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/gpuplatform_bench_api"
)


def prepare(tenants: int) -> str:
    """Create the database, migrate, seed a tree and return a token of the root's tenant-admin."""
    env = {**os.environ, "DATABASE_URL": DATABASE_URL}
    subprocess.run(
        ["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", "gpuplatform_bench_api"], check=True
    )
    subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", "gpuplatform_bench_api"], check=True)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=REPO, env=env, check=True)
    seed = f"""
from gpuplatform.accounts.models import User
from gpuplatform.accounts.tokens import issue_api_token
from tenants.services import add_membership, create_tenant
pat = User.objects.create_user("pat", platform_role="platform-admin")
owner = User.objects.create_user("owner")
root = create_tenant(actor=pat, slug="org", display_name="Org")
departments = [create_tenant(actor=pat, slug=f"dept-{{d}}", display_name=f"Dept {{d}}", parent_id=root.pk)
               for d in range(20)]
for n in range({tenants} - 21):
    create_tenant(actor=pat, slug=f"team-{{n}}", display_name=f"Team {{n}}", parent_id=departments[n % 20].pk,
                  namespaces=[("", f"ns-{{n}}")])
add_membership(actor=pat, tenant_id=root.pk, username="owner", role="tenant-admin")
print(issue_api_token(actor=owner, name="bench", scopes=["read"]).plaintext)
"""
    out = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", seed],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    # As autovacuum would have by now on a live database: without statistics the planner sorts the
    # whole visible tree for every page.
    subprocess.run(
        ["psql", "-h", "127.0.0.1", "-U", "postgres", "-q", "-c", "ANALYZE", "gpuplatform_bench_api"],
        check=True,
    )
    return out.stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=float, default=100.0, help="requests per second")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--tenants", type=int, default=1000)
    parser.add_argument("--page-size", type=int, default=100)
    parser.add_argument("--port", type=int, default=8391)
    parser.add_argument("--server", choices=["gunicorn", "runserver"], default="gunicorn")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    args = parser.parse_args()

    token = prepare(args.tenants)
    env = {
        **os.environ,
        "DATABASE_URL": DATABASE_URL,
        "API_THROTTLE_RATE": "1000000/minute",
        "API_USER_THROTTLE_RATE": "1000000/minute",
        "LOG_LEVEL": "WARNING",
    }
    server = start_server(
        kind=args.server, port=args.port, workers=args.workers, threads=4, env=env, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{args.port}/api/v1/tenants/?page_size={args.page_size}"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(request, timeout=2).read()
                break
            except OSError:
                time.sleep(0.2)
        latencies: list[float] = []
        errors = 0
        lock = threading.Lock()
        # Each client thread keeps its connection alive, as HTTP clients and load balancers do: a new
        # TCP connection per request cost the client (on the same two cores) as much as the server.
        local = threading.local()
        path = f"/api/v1/tenants/?page_size={args.page_size}"
        headers = {"Authorization": f"Bearer {token}"}

        def fetch() -> bytes:
            if getattr(local, "conn", None) is None:
                local.conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=10)
            try:
                local.conn.request("GET", path, headers=headers)
                response = local.conn.getresponse()
                return response.read()
            except (OSError, http.client.HTTPException):
                local.conn.close()
                local.conn = None
                raise

        def one() -> None:
            nonlocal errors
            started = time.perf_counter()
            try:
                body = fetch()
                ok = body.count(b'"slug"') == args.page_size
            except (OSError, http.client.HTTPException):
                ok = False
            with lock:
                if ok:
                    latencies.append(time.perf_counter() - started)
                else:
                    errors += 1

        total = int(args.rate * args.seconds)
        with ThreadPoolExecutor(max_workers=32) as pool:
            start = time.perf_counter()
            for n in range(total):
                # Open loop: requests leave on schedule whether or not earlier ones have answered.
                delay = start + n / args.rate - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                pool.submit(one)
        elapsed = time.perf_counter() - start
        latencies.sort()

        def p(q: float) -> float:
            return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000

        print(
            f"{len(latencies)} ok, {errors} errors in {elapsed:.1f}s ({len(latencies) / elapsed:.0f} req/s) "
            f"for {args.page_size} of {args.tenants} tenants per page"
        )
        median = statistics.median(latencies) * 1000
        print(f"latency ms: median {median:.1f}, P95 {p(0.95):.1f}, P99 {p(0.99):.1f}")
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
