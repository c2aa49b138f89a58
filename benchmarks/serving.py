"""The server a benchmark measures: gunicorn as deploy/Dockerfile runs it, or the demo's runserver."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parents[1]


def start_server(
    *,
    kind: str,
    port: int,
    workers: int,
    threads: int,
    env: dict[str, str],
    stderr: IO[Any] | int,
    tree: Path = REPO,
) -> subprocess.Popen[bytes]:
    """The server, run from ``tree`` (a checkout of the code to measure; this one by default)."""
    command = (
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"]
        if kind == "runserver"
        else [
            str(Path(sys.executable).with_name("gunicorn")),
            "gpuplatform.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--threads",
            str(threads),
            "--backlog",
            "256",
        ]
    )
    return subprocess.Popen(command, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
