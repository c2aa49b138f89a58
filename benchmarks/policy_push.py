"""Policy push (DESIGN §10): 5,000 agents waiting at once in the long poll; a new revision reaches
1,000 of them in <= 2 s and all 5,000 in <= 10 s; the push server's memory.

The push server is uvicorn serving gpuplatform.asgi (as docs/agents.md deploys it) in a child
process, on a PostgreSQL database of its own, with Redis pub/sub carrying the fan-out. The agents
are asyncio clients (aiohttp) in this process, each holding `GET /api/v1/agents/bundle/` with its own
node credential. Round 1 publishes a revision to 1,000 of the waiting nodes, round 2 (all 5,000
waiting again) to every node; a round's time runs from just before the publish (after the commit
that set the desired revisions) to the moment the last envelope is received and parsed. Usage:

    .venv/bin/python benchmarks/policy_push.py --agents 5000 --workers 1 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DB = "gpuplatform_bench_push"
os.environ["DATABASE_URL"] = os.environ.get("BENCH_DATABASE_URL", f"postgres://postgres@127.0.0.1:5432/{DB}")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/15")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")
os.environ.setdefault("SECRET_KEY", "bench-" + "x" * 40)
# This process seeds and publishes with the ORM between measured windows, inside its event loop.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

import aiohttp  # noqa: E402
import django  # noqa: E402
import psycopg  # noqa: E402

psycopg.connect("postgres://postgres@127.0.0.1:5432/postgres", autocommit=True).execute(
    f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)"
).connection.execute(f"CREATE DATABASE {DB}")
django.setup()

from django.core.management import call_command  # noqa: E402

call_command("migrate", verbosity=0)

from inventory.models import Cluster, Node, NodePool  # noqa: E402
from policies import push, signing  # noqa: E402
from policies.models import NodeAgent, NodePolicyState, PolicyRevision  # noqa: E402
from policies.services.agents import hash_secret  # noqa: E402


def seed(agents: int) -> tuple[NodePool, list[Node], list[str]]:
    cluster = Cluster.objects.create(name="bench", api_endpoint="https://bench.invalid")
    pool = NodePool.objects.create(cluster=cluster, name="h100")
    nodes = Node.objects.bulk_create(
        [Node(cluster=cluster, pool=pool, name=f"gpu-{i:05d}") for i in range(agents)], batch_size=2000
    )
    credentials = [f"gpa_{secrets.token_urlsafe(32)}" for _ in nodes]
    NodeAgent.objects.bulk_create(
        [
            NodeAgent(
                cluster=cluster, node=node, credential_hash=hash_secret(c), rotate_after="2099-01-01T00:00Z"
            )
            for node, c in zip(nodes, credentials, strict=True)
        ],
        batch_size=2000,
    )
    r1 = make_revision(pool, 1)
    NodePolicyState.objects.bulk_create(
        [
            NodePolicyState(
                node=n, desired_revision=r1, state="applied", applied_revision=1, applied_hash=r1.content_hash
            )
            for n in nodes
        ],
        batch_size=2000,
    )
    return pool, nodes, credentials


def make_revision(pool: NodePool, number: int) -> PolicyRevision:
    bundle = {
        "files": [
            {"path": "device-plugin/config.yaml", "content": f"version: v1\n# r{number}\n" + "x" * 600}
        ],
        "labels": {"nvidia.com/device-plugin.config": f"gpuplatform-r{number}"},
        "configmaps": [],
    }
    digest = signing.content_hash(bundle)
    return PolicyRevision.objects.create(
        pool=pool,
        number=number,
        previous=PolicyRevision.objects.filter(pool=pool, number=number - 1).first(),
        policy={},
        bundle=bundle,
        content_hash=digest,
        signature=signing.sign(digest.encode()),
        key_id=signing.key_id(),
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mib(pid: int, field: str = "VmRSS") -> float:
    total = 0.0
    pids = [pid] + [
        int(p)
        for p in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    ]
    for p in pids:
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                total += int(line.split()[1]) / 1024
    return total


def cpu_seconds(pid: int) -> float:
    pids = [pid] + [
        int(p)
        for p in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    ]
    ticks = 0
    for p in pids:
        fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


async def wait_idle(pid: int, quiet: float = 1.5, cap: float = 180.0) -> None:
    """Until the server has spent (almost) no CPU for `quiet` seconds: every waiter is registered."""
    last = cpu_seconds(pid)
    deadline = time.monotonic() + cap
    while time.monotonic() < deadline:
        await asyncio.sleep(quiet)
        now = cpu_seconds(pid)
        if now - last < 0.05 * quiet:
            return
        last = now


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, default=5000)
    parser.add_argument("--first", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    started = time.perf_counter()
    pool, nodes, credentials = seed(args.agents)
    print(f"seeded {args.agents} nodes and agents in {time.perf_counter() - started:.1f}s", flush=True)
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "gpuplatform.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            str(args.workers),
            "--backlog",
            "8192",
            "--log-level",
            "warning",
            "--timeout-keep-alive",
            "120",
        ],
        cwd=REPO,
        env={
            **{k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"},
            "PYTHONPATH": str(REPO),
        },
    )
    url = f"http://127.0.0.1:{port}/api/v1/agents/bundle/"
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=60, sock_read=None)
    results: dict[str, list[float]] = {"first": [], "all": []}
    try:
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            for _ in range(120):
                try:
                    async with session.get(f"http://127.0.0.1:{port}/healthz") as r:
                        if r.status == 200:
                            break
                except aiohttp.ClientError:
                    await asyncio.sleep(0.5)
            idle_rss = rss_mib(server.pid)
            number = 1
            for round_no in range(args.rounds):
                for label, count in (("first", args.first), ("all", args.agents)):
                    arrivals: dict[int, float] = {}

                    async def agent(i: int, applied: int) -> None:
                        # As the real agent does: poll again after a timeout (204) until handed a bundle.
                        headers = {"Authorization": f"Agent {credentials[i]}"}
                        while True:
                            async with session.get(
                                url, params={"applied": applied, "timeout": 60}, headers=headers
                            ) as r:
                                if r.status == 200:
                                    body = await r.json()
                                    if body.get("payload"):
                                        arrivals[i] = time.perf_counter()  # noqa: B023  (this round's)
                                    return

                    tasks = []
                    for start in range(0, args.agents, 500):
                        tasks += [
                            asyncio.create_task(agent(i, number))
                            for i in range(start, min(start + 500, args.agents))
                        ]
                        await asyncio.sleep(0.05)
                    await wait_idle(server.pid)
                    waiting_rss = rss_mib(server.pid)
                    number += 1
                    revision = make_revision(pool, number)
                    chosen = nodes[:count]
                    NodePolicyState.objects.filter(node__in=chosen).update(
                        desired_revision=revision, state="pending"
                    )
                    t0 = time.perf_counter()
                    push.publish(
                        cluster_id=pool.cluster_id, nodes={n.pk: (revision.pk, "apply") for n in chosen}
                    )
                    while len(arrivals) < count and time.perf_counter() - t0 < 60:
                        await asyncio.sleep(0.005)
                    took = max(arrivals.values()) - t0 if len(arrivals) == count else float("inf")
                    median = (
                        statistics.median(v - t0 for v in arrivals.values()) if arrivals else float("nan")
                    )
                    results[label].append(took)
                    print(
                        f"round {round_no + 1} {label:>5}: {len(arrivals)}/{count} envelopes, "
                        f"last {took:.2f}s, median {median:.2f}s; "
                        f"server RSS {waiting_rss:.0f} MiB with {args.agents} waiting",
                        flush=True,
                    )
                    # The rest were not sent anything: mark every node applied at `number`, release them.
                    NodePolicyState.objects.filter(node__pool=pool).update(
                        desired_revision=revision, state="applied", applied_revision=number
                    )
                    push.publish(
                        cluster_id=pool.cluster_id,
                        nodes={n.pk: (revision.pk, "apply") for n in nodes[count:]},
                    )
                    await asyncio.gather(*tasks, return_exceptions=True)
            peak = rss_mib(server.pid, "VmHWM")
    finally:
        server.terminate()
        server.wait(10)
    print(f"server RSS idle {idle_rss:.0f} MiB, peak {peak:.0f} MiB ({args.workers} uvicorn worker(s))")
    for label, count in (("first", args.first), ("all", args.agents)):
        values = results[label]
        print(
            f"{count} agents: median {statistics.median(values):.2f}s over {len(values)} rounds "
            f"({', '.join(f'{v:.2f}' for v in values)})"
        )


if __name__ == "__main__":
    asyncio.run(main())
