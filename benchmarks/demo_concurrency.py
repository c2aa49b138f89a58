"""The demo under concurrent clients (issue 9 item 6, issue 11 defect 2): a running ``manage.py demo``
answers every one of 100 concurrent POSTs (none reset), 200 concurrent API calls while its sync and
admission loop write answer without a 500, and the concurrent POSTs admit as many as the same POSTs
sent one by one to an identically seeded demo.

Each demo is the real command (embedded defaults: a fresh SQLite file, kubesim in process, the
background sync and admission loop) in a child process. The clients are threads released together by
a barrier, each with its own connection and no retry: a reset connection counts as a failure. Usage:

    .venv/bin/python benchmarks/demo_concurrency.py --posts 100 --mixed 200
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TOKEN_LINE = re.compile(r"^\s+(\w+) \(tenant-admin of (\w+)\): (gpp_\S+)$")


class Demo:
    """One `manage.py demo` in a child process on its own SQLite file."""

    def __init__(self, *, port: int, workdir: Path, label: str) -> None:
        self.port = port
        self.log = workdir / f"{label}.log"
        env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{workdir / label}.sqlite3",
            "PORT": str(port),
            "LOG_LEVEL": "WARNING",
        }
        env.pop("REDIS_URL", None)  # the embedded default: in-process cache, tasks inline
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "demo", "--port", str(port)],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=open(self.log, "w"),  # noqa: SIM115 - the child's life
            text=True,
        )
        self.tokens: dict[str, str] = {}
        self.banner: list[str] = []  # what the demo printed up to its "Inventory:" line
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.banner.append(line.rstrip("\n"))
            match = TOKEN_LINE.match(line.rstrip("\n"))
            if match:
                self.tokens[match.group(1)] = match.group(3)
            if "Inventory:" in line:
                break
        threading.Thread(target=self.process.stdout.read, daemon=True).start()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if call(port, "GET", "/healthz")[0] == 200:
                    return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"the demo did not start; see {self.log}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()


def call(
    port: int, method: str, path: str, *, token: str = "", body: dict[str, Any] | None = None, key: str = ""
) -> tuple[int, dict[str, Any], str]:
    """One request on a fresh connection, no retry: (status, JSON body or {}, content type)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if key:
        headers["Idempotency-Key"] = key
    try:
        connection.request(method, path, body=json.dumps(body) if body else None, headers=headers)
        response = connection.getresponse()
        raw = response.read()
        kind = response.getheader("Content-Type") or ""
        parsed = json.loads(raw) if "json" in kind and raw else {}
        return response.status, parsed, kind
    finally:
        connection.close()


def together(jobs: list[Any]) -> tuple[list[Any], float]:
    """Run each job in its own thread, all released at once; results (or the exception) in order."""
    results: list[Any] = [None] * len(jobs)
    barrier = threading.Barrier(len(jobs))

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = jobs[i]()
        except Exception as exc:  # a reset or refused connection is a result here
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results, time.perf_counter() - started


def outcome(result: Any) -> str:
    if isinstance(result, Exception):
        return type(result).__name__
    status, body, _ = result
    return f"{status} {body.get('state', body.get('code', ''))}".strip()


def post_job(port: int, token: str, i: int, run_id: str) -> Any:
    # Half on the H100s (room for a few), half on the shared T4s (room for more): both run out.
    flavor = "h100" if i % 2 else "t4-shared"
    body = {"tenant": "vision", "flavor": flavor, "amount": 1, "reason": f"bench {i}"}
    return lambda: call(
        port, "POST", "/api/v1/capacity-requests/", token=token, body=body, key=f"bench-{run_id}-{i:04d}"
    )


MIXED_GETS = [
    "/api/v1/capacity-requests/?page_size=20",
    "/api/v1/nodes/?page_size=20",
    "/api/v1/quotas/",
    "/api/v1/flavors/",
    "/api/v1/me/",
]


def admitted(results: list[Any]) -> int:
    return sum(1 for r in results if not isinstance(r, Exception) and r[1].get("state") == "admitted")


def failed(results: list[Any]) -> int:
    """Reset or refused connections, and answers of 5xx."""
    return sum(1 for r in results if isinstance(r, Exception) or r[0] >= 500)


def mixed_job(port: int, i: int, alice: str, bob: str) -> Any:
    """Every fourth call a POST (bob, for nlp, on the shared T4s), the others reads of busy lists."""
    if i % 4 == 0:
        body = {"tenant": "nlp", "flavor": "t4-shared", "amount": 1}
        path = "/api/v1/capacity-requests/"
        return lambda: call(port, "POST", path, token=bob, body=body, key=f"bench-m-{i:04d}")
    path = MIXED_GETS[i % len(MIXED_GETS)]
    return lambda: call(port, "GET", path, token=alice if i % 2 else bob)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--posts", type=int, default=100, help="concurrent POSTs (and the sequential ones)")
    parser.add_argument("--mixed", type=int, default=200, help="concurrent mixed calls while it syncs")
    parser.add_argument("--port", type=int, default=8461)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="demo-bench-"))
    failures = 0

    demo = Demo(port=args.port, workdir=workdir, label="concurrent")
    try:
        alice, bob = demo.tokens["alice"], demo.tokens["bob"]
        results, took = together([post_job(args.port, alice, i, "c") for i in range(args.posts)])
        concurrent_admitted = admitted(results)
        print(f"{args.posts} concurrent POSTs in {took:.1f}s: {dict(Counter(outcome(r) for r in results))}")
        failures += failed(results)

        results, took = together([mixed_job(args.port, i, alice, bob) for i in range(args.mixed)])
        counts = Counter(outcome(r) if isinstance(r, Exception) else str(r[0]) for r in results)
        print(f"{args.mixed} concurrent mixed calls while it syncs, in {took:.1f}s: {dict(counts)}")
        errors = [r for r in results if not isinstance(r, Exception) and r[0] >= 400]
        if any("problem+json" not in r[2] for r in errors):
            print("  some errors were not problem+json")
            failures += 1
        failures += failed(results)
    finally:
        demo.stop()

    demo = Demo(port=args.port + 1, workdir=workdir, label="sequential")
    try:
        token = demo.tokens["alice"]
        sequential = [post_job(args.port + 1, token, i, "s")() for i in range(args.posts)]
        sequential_admitted = admitted(sequential)
        print(f"{args.posts} sequential POSTs: {dict(Counter(outcome(r) for r in sequential))}")
    finally:
        demo.stop()
    print(f"admitted: concurrent {concurrent_admitted}, sequential {sequential_admitted}")
    if concurrent_admitted != sequential_admitted:
        failures += 1
    print("OK" if not failures else f"FAILED ({failures}); server logs in {workdir}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
