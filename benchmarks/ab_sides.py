"""Two long-lived processes, one per checkout, taking turns (ABBA) over the admission benchmark's fleet:
the driver shared by admission_loop.py and admission_submit.py. Each side is this same script run with
``--serve`` in its checkout; it prints ``ready <code dir>`` and then answers one line per line asked."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.admission_http import DATABASE_URL, DB, SEED, manage  # noqa: E402 - the path above


def fresh_fleet(extra_env: dict[str, str] | None = None) -> dict[str, str]:
    """A new scratch database with the HTTP benchmark's fleet, analysed; the sides' environment."""
    env = {
        **os.environ,
        "DATABASE_URL": DATABASE_URL,
        "LOG_LEVEL": "WARNING",
        "REDIS_URL": os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14"),
        **(extra_env or {}),
    }
    subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", DB], check=True)
    subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", DB], check=True)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=REPO, env=env, check=True)
    manage(env, SEED)
    subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-q", "-c", "ANALYZE", DB], check=True)
    return env


class Sides:
    """``before`` runs in the old checkout, ``after`` in this one; ``ask`` sends a line to one side."""

    def __init__(self, *, script: str, argv: list[str], old_tree: Path, env: dict[str, str]) -> None:
        self.processes: dict[str, subprocess.Popen[str]] = {}
        for label, tree in (("before", old_tree.resolve()), ("after", REPO)):
            process = subprocess.Popen(
                [sys.executable, str(Path(script).resolve()), *argv],
                cwd=tree,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            assert process.stdout is not None
            _, code = process.stdout.readline().split()
            print(f"{label}: {code}", flush=True)  # which checkout's code this side runs
            self.processes[label] = process

    def ask(self, label: str, line: str) -> list[str]:
        process = self.processes[label]
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(line + "\n")
        process.stdin.flush()
        return process.stdout.readline().split()

    def turns(self, count: int, measure: Callable[[str], Any]) -> tuple[dict[str, list[Any]], list[float]]:
        """``count`` measures a side, ABBA (before first in even turns), and the load after each turn."""
        results: dict[str, list[Any]] = {"before": [], "after": []}
        loads = []
        for i in range(count):
            for label in ("before", "after") if i % 2 == 0 else ("after", "before"):
                results[label].append(measure(label))
            loads.append(os.getloadavg()[0])
        return results, loads

    def close(self) -> None:
        for process in self.processes.values():
            assert process.stdin is not None
            process.stdin.close()
            process.wait(timeout=60)
