"""Admission over HTTP (DESIGN §10): P99 <= 50 ms, >= 200 decisions/s, concurrency admits exactly N.

PostgreSQL and a real HTTP server in a child process: gunicorn with ``--workers`` processes (the
production server of deploy/Dockerfile), or Django's threaded runserver with ``--server runserver`` (as
the demo serves). The fleet: 1,000 tenants in 100 cohorts (a root and 9 teams each), one H100 flavor,
every team with a quota and a queue, and 10,000 active allocations (10 per team). The tables are
ANALYZEd after seeding, as autovacuum would have done on a live database. Usage:

    .venv/bin/python benchmarks/admission_http.py --latency-requests 300 --seconds 10 --rounds 5

With ``--compare-with REV`` the whole measurement (seed, server, load) runs alternately on the code of
REV (a git worktree beside this one, ``--old-tree``) and on this tree, ``--repeats`` times each, in the
same scratch database recreated for every run; the medians of each side and their ratio are printed,
with the load average at each run: a noisy shared machine slows both alike.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.serving import start_server  # the path above makes the repo importable

REPO = Path(__file__).resolve().parents[1]
DATABASE_URL = os.environ.get(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/gpuplatform_bench_admission"
)
DB = DATABASE_URL.rpartition("/")[2]  # dropped and created afresh: BENCH_DATABASE_URL names a scratch one

SEED = """
from decimal import Decimal
from django.utils import timezone
from gpuplatform.accounts.models import User
from gpuplatform.accounts.tokens import issue_api_token
from inventory.models import Cluster, Node, NodePool, ShareableUnit
from quotas.models import CapacityRequest, Flavor, PriorityClass, Queue, Quota
from tenants.services import create_tenant
pat = User.objects.create_user("pat", platform_role="platform-admin")
cluster = Cluster.objects.create(name="bench", api_endpoint="https://bench.invalid")
pool = NodePool.objects.create(cluster=cluster, name="h100")
node = Node.objects.create(cluster=cluster, pool=pool, name="n0")
GPU = "nvidia.com/gpu"
ShareableUnit.objects.create(cluster=cluster, node=node, key="k", kind="whole_gpu", resource_name=GPU,
                             count=10**9, ge_each=Decimal(1))
flavor = Flavor.objects.create(name="h100", pool=pool, resources=[{"name": GPU, "ge_per_unit": "1"}])
batch = PriorityClass.objects.create(name="batch", value=100)
now = timezone.now()
rows = []
for c in range(100):
    root = create_tenant(actor=pat, slug=f"org-{c}", display_name=f"Org {c}")
    for t in range(9):
        team = create_tenant(actor=pat, slug=f"team-{c}-{t}", display_name=f"Team {c}-{t}", parent_id=root.pk)
        queue = Queue.objects.create(tenant=team, name="default")
        Quota.objects.create(tenant=team, flavor=flavor, resource="nvidia.com/gpu", nominal=10**6)
        for a in range(10 if (c * 9 + t) < 1000 else 0):
            rows.append(CapacityRequest(tenant=team, queue=queue, flavor=flavor, priority_class=batch,
                amounts={"nvidia.com/gpu": 1}, ge=1, state="active", admitted_at=now,
                admitted_order=len(rows), created_order=len(rows)))
# 900 teams x 10 = 9,000; the last 1,000 go to the first 100 teams so the total is 10,000.
teams = list(Queue.objects.select_related("tenant")[:100])
for i in range(1000):
    q = teams[i % 100]
    rows.append(CapacityRequest(tenant=q.tenant, queue=q, flavor=flavor, priority_class=batch,
        amounts={"nvidia.com/gpu": 1}, ge=1, state="active", admitted_at=now,
        admitted_order=len(rows), created_order=len(rows)))
CapacityRequest.objects.bulk_create(rows, batch_size=2000)
print(issue_api_token(actor=pat, name="bench", scopes=["read", "write"]).plaintext)
"""

# A backlog for the admission loop: `backlog` pending requests spread over the 100 cohorts (as after a
# quota raise or a wave of releases), then one loop run decides them all, each cohort in its own
# transaction under its locks, with materialisation queued to the broker.
BACKLOG = """
import time
from django.utils import timezone
from quotas.runner.loop import run_admission_loop
from quotas.runner.inputs import micros
from quotas.models import CapacityRequest, Flavor, PriorityClass, Queue
flavor, batch = Flavor.objects.get(name="h100"), PriorityClass.objects.get(name="batch")
queues = list(
    Queue.objects.select_related("tenant").filter(tenant__slug__startswith="team-").order_by("tenant__slug")
)
order = micros(timezone.now())
CapacityRequest.objects.bulk_create([
    CapacityRequest(tenant=q.tenant, queue=q, flavor=flavor, priority_class=batch,
                    amounts={{"nvidia.com/gpu": 1}}, ge=1, state="pending", reason_code="submitted",
                    created_order=order + i)
    for i, q in enumerate(queues[(i * 37) % len(queues)] for i in range({backlog}))
])
# A worker that has been running has its URLconf loaded (the loop's heartbeat links a page) and each
# cohort's catalogue cached; this process is fresh, so both are done before the clock starts.
from django.urls import reverse
from quotas.runner.catalogue import catalogue_of
from quotas.runner.inputs import cohort_root_path
reverse("queues")
for root_path in sorted({{cohort_root_path(q.tenant.path) for q in queues}}):
    catalogue_of(root_path=root_path, flavors=[flavor])
started = time.perf_counter()
result = run_admission_loop()
took = time.perf_counter() - started
left = CapacityRequest.objects.filter(state="pending").count()
print(result["admitted"], left, result["cohorts"], f"{{took:.3f}}")
"""

ROOM = """
from quotas.models import CapacityRequest, Quota
CapacityRequest.objects.filter(tenant__slug="team-99-8", state__in=["pending", "admitted", "active"]).delete()
Quota.objects.filter(tenant__path__startswith=Quota.objects.get(tenant__slug="team-99-8").tenant.path[:34]).update(nominal=0)
Quota.objects.filter(tenant__slug="team-99-8").update(nominal={room})
"""


def manage(env: dict[str, str], code: str, tree: Path = REPO) -> str:
    out = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=tree,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def post(
    port: int, token: str, body: dict[str, object], key: str = ""
) -> tuple[int, dict[str, object], float]:
    """POST a request; with an Idempotency-Key, retry connection failures and 5xx with the same key
    (the dev server resets connections beyond its backlog): the key makes the retry exactly-once."""
    data = json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    if key:
        headers["Idempotency-Key"] = key
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1/capacity-requests/", data=data, headers=headers
    )
    started = time.perf_counter()
    for attempt in range(20):
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read()), time.perf_counter() - started
        except urllib.error.HTTPError as exc:
            if not key or exc.code < 500:
                return exc.code, json.loads(exc.read() or b"{}"), time.perf_counter() - started
        except OSError:
            if not key:
                raise
        time.sleep(0.05 * (attempt + 1))
    return 599, {}, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency-requests", type=int, default=300)
    parser.add_argument(
        "--warmup", type=int, default=600, help="requests before measuring: fills each worker's caches"
    )
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--backlog", type=int, default=2000, help="pending requests for the loop phase")
    parser.add_argument("--port", type=int, default=8392)
    parser.add_argument("--server", choices=["gunicorn", "runserver"], default="gunicorn")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker")
    parser.add_argument("--compare-with", help="a git revision measured alternately beside this tree")
    parser.add_argument("--old-tree", type=Path, help="where REV is checked out (default: a temp worktree)")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each side with --compare-with")
    args = parser.parse_args()
    if args.compare_with:
        compare(args)
    else:
        measure(args, REPO)


def compare(args: argparse.Namespace) -> None:
    old_tree = args.old_tree or Path(tempfile.gettempdir()) / f"admission-bench-{args.compare_with}"
    if not old_tree.exists():
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(old_tree), args.compare_with], cwd=REPO, check=True
        )
    trees = {"before": old_tree, "after": REPO}
    runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for repeat in range(args.repeats):
        for label, tree in trees.items():
            print(f"--- {label} ({tree}), run {repeat + 1} of {args.repeats}", flush=True)
            runs[label].append(measure(args, tree))
    print(f"\n{args.repeats} alternating runs each; load average (1 min) at each run's end:")
    for label in trees:
        print(f"  {label}: " + ", ".join(f"{r['load']:.1f}" for r in runs[label]))
    print(f"{'median of runs':38} {'before':>9} {'after':>9}  ratio")
    for key, title, better in FIGURES:
        before = statistics.median(r[key] for r in runs["before"])
        after = statistics.median(r[key] for r in runs["after"])
        ratio = before / after if better == "lower" else after / before
        print(f"{title:38} {before:9.1f} {after:9.1f}  {ratio:.2f}x")
    exact = all(r["exact"] for side in runs.values() for r in side)
    print("100 concurrent against room for N: " + ("exactly N in every round" if exact else "MISMATCH"))


# (key, title, which way is better): the ratio is always "times better" (> 1: the new code is faster).
FIGURES = (
    ("median_ms", "sequential POST median (ms)", "lower"),
    ("p95_ms", "sequential POST P95 (ms)", "lower"),
    ("p99_ms", "sequential POST P99 (ms)", "lower"),
    ("http_rate", "8 clients: new requests decided/s", "higher"),
    ("loop_rate", "admission loop decisions/s", "higher"),
)


def measure(args: argparse.Namespace, tree: Path) -> dict[str, float]:
    """One whole run on the code of ``tree``: its figures, as printed."""
    env = {
        **os.environ,
        "DATABASE_URL": DATABASE_URL,
        # Both throttles lifted: one user's tokens together (the user rate) passed 3,600 a minute in
        # the faster runs and refused the concurrency rounds' submissions with 429.
        "API_THROTTLE_RATE": "100000000/minute",
        "API_USER_THROTTLE_RATE": "100000000/minute",
        "LOG_LEVEL": "WARNING",
    }
    # Materialisation goes to the broker, as in production (a scratch Redis database).
    env["REDIS_URL"] = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
    redis.Redis.from_url(env["REDIS_URL"]).flushdb()  # a scratch database: the last run's messages go
    subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", DB], check=True)
    subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", DB], check=True)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=tree, env=env, check=True)
    seeded = time.perf_counter()
    token = manage(env, SEED, tree).splitlines()[-1]
    print(
        f"seeded 1,000 tenants, 100 cohorts, 10,000 active allocations in {time.perf_counter() - seeded:.0f}s"
    )
    subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-q", "-c", "ANALYZE", DB], check=True)
    server_log = open(os.environ.get("BENCH_SERVER_LOG", os.devnull), "w")  # noqa: SIM115 - the server's life
    server = start_server(
        kind=args.server,
        port=args.port,
        workers=args.workers,
        threads=args.threads,
        env=env,
        stderr=server_log,
        tree=tree,
    )
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{args.port}/healthz", timeout=2).read()
                break
            except OSError:
                time.sleep(0.2)
        n = 0
        figures: dict[str, float] = {"exact": 1.0}

        def body() -> dict[str, object]:
            nonlocal n
            n += 1
            return {"tenant": f"team-{n % 100}-{n % 9}", "flavor": "h100", "amount": 1}

        # 0. warm-up: a server that has been running has each cohort's catalogue cached in each worker
        with ThreadPoolExecutor(max_workers=args.workers) as pool:
            list(pool.map(lambda _: post(args.port, token, body()), range(args.warmup)))

        # 1. latency, one client at a time
        latencies = []
        for _ in range(args.latency_requests):
            status, payload, took = post(args.port, token, body())
            assert status == 201 and payload["state"] == "admitted", (status, payload)
            latencies.append(took * 1000)
        latencies.sort()
        p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
        figures["median_ms"] = statistics.median(latencies)
        figures["p95_ms"] = latencies[int(0.95 * len(latencies))]
        figures["p99_ms"] = p99
        print(
            f"latency ms over {len(latencies)} sequential decisions: "
            f"median {statistics.median(latencies):.1f}, "
            f"P95 {latencies[int(0.95 * len(latencies))]:.1f}, P99 {p99:.1f}"
        )

        # 2. throughput, closed loop with several clients
        done, lock, stop_at = [0], threading.Lock(), time.perf_counter() + args.seconds

        def client(i: int) -> None:
            k = 0
            while time.perf_counter() < stop_at:
                k += 1
                status, _, _ = post(
                    args.port,
                    token,
                    {"tenant": f"team-{(i * 7 + k) % 100}-{k % 9}", "flavor": "h100", "amount": 1},
                )
                if status == 201:
                    with lock:
                        done[0] += 1

        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.clients) as pool:
            list(pool.map(client, range(args.clients)))
        rate = done[0] / (time.perf_counter() - started)
        figures["http_rate"] = rate
        print(
            f"throughput: {done[0]} decisions in {time.perf_counter() - started:.1f}s "
            f"with {args.clients} clients = {rate:.0f}/s"
        )

        # 3. the admission loop over a backlog: decisions per second of the deciding service itself
        loop = manage(env, BACKLOG.format(backlog=args.backlog), tree).split()[-4:]
        print(
            f"admission loop: {args.backlog} pending in {loop[2]} cohorts, {loop[0]} admitted, "
            f"{loop[1]} still pending, in {float(loop[3]):.2f}s "
            f"= {int(loop[0]) / float(loop[3]):.0f} decisions/s"
        )
        figures["loop_rate"] = int(loop[0]) / float(loop[3])

        # 4. 100 concurrent requests against room for N, several rounds
        for r in range(args.rounds):
            room = 10 + 7 * r
            manage(env, ROOM.format(room=room), tree)
            payload = {"tenant": "team-99-8", "flavor": "h100", "amount": 1}
            keys = [f"bench-round{r}-{i:03d}" for i in range(100)]
            with ThreadPoolExecutor(max_workers=100) as pool:
                results = list(pool.map(partial(post, args.port, token, payload), keys))
            # Distinct ids: a retried request (same key) answers with the same request, counted once.
            admitted = len(
                {p["id"] for code, p, _ in results if code in (200, 201) and p.get("state") == "admitted"}
            )
            errors = sum(1 for code, _, _ in results if code not in (200, 201))
            if errors:
                first = next((code, p) for code, p, _ in results if code not in (200, 201))
                print("  first error:", first)
            print(
                f"concurrency round {r + 1}: room {room}, 100 concurrent, "
                f"admitted {admitted}, errors {errors}" + ("" if admitted == room else "  <-- MISMATCH")
            )
            figures["exact"] = float(figures["exact"] and admitted == room and not errors)
    finally:
        server.terminate()
        server.wait(timeout=10)
        server_log.close()
    figures["load"] = os.getloadavg()[0]
    print(f"load average (1 min) {figures['load']:.1f}", flush=True)
    return figures


if __name__ == "__main__":
    main()
