"""A real Celery worker (and beat) in processes of their own, against this test's database and Redis.

The worker is `celery -A gpuplatform worker`, started with the environment a deployment gives it: the
test database's URL (pytest-django's, so it sees what `transaction=True` tests commit), the test Redis,
loopback clusters allowed (kubesim serves on 127.0.0.1). Each test sends its tasks to a queue of its
own and the worker reads only that queue, so workers of other xdist processes never take them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from celery import current_app
from django.conf import settings
from django.db import connection

REPO_ROOT = Path(__file__).resolve().parents[2]
CELERY = str(Path(sys.executable).with_name("celery"))
VISIBILITY_TIMEOUT_S = 2  # the worker's Redis hands an unacknowledged message back after this
READY_WITHIN_S = 60  # a cold start imports Django, the apps and the kubernetes client on a busy machine


def database_url() -> str:
    """The URL of the database this test runs in (pytest-django's test database, not the configured one)."""
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def eventually(check: Callable[[], Any], *, within: float = 30.0, every: float = 0.2, what: str = "") -> Any:
    """Poll ``check`` until it returns something truthy; fail after ``within`` seconds saying what."""
    deadline = time.monotonic() + within
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            pytest.fail(f"not within {within:.0f} s: {what or check}")
        time.sleep(every)


@dataclass
class CeleryProcess:
    """One `celery worker` or `celery beat` process, its log in a file."""

    argv: list[str]
    env: dict[str, str]
    log: Path
    ready_line: str
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)

    def start(self) -> CeleryProcess:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.argv, cwd=REPO_ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT
            )
        eventually(self._ready, within=READY_WITHIN_S, every=0.3, what=f"{self.argv[3]} ready ({self.log})")
        return self

    def _ready(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            pytest.fail(f"{self.argv[3]} exited with {self.process.returncode}:\n{self.log.read_text()}")
        return self.ready_line in self.log.read_text()

    def kill(self) -> None:
        """SIGKILL: no warm shutdown, no message handed back; what it held stays unacknowledged."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


@dataclass
class Celery:
    """Starts workers and beats on this test's queue; all are stopped at teardown."""

    queue: str
    env: dict[str, str]
    tmp: Path
    started: list[CeleryProcess] = field(default_factory=list)

    def worker(self, **env: str) -> CeleryProcess:
        name = f"w{len(self.started)}-{self.queue}"
        argv = [CELERY, "-A", "gpuplatform", "worker", "-Q", self.queue, "--pool", "solo"]
        argv += ["--hostname", f"{name}@%h", "--without-gossip", "--without-mingle", "--loglevel", "INFO"]
        proc = CeleryProcess(argv, {**self.env, **env}, self.tmp / f"{name}.log", ready_line=" ready.")
        self.started.append(proc)
        return proc.start()

    def beat(self) -> CeleryProcess:
        argv = [CELERY, "-A", "gpuplatform", "beat", "--schedule", str(self.tmp / "beat-schedule")]
        argv += ["--loglevel", "INFO"]
        proc = CeleryProcess(argv, self.env, self.tmp / "beat.log", ready_line="beat: Starting")
        self.started.append(proc)
        return proc.start()


@pytest.fixture
def celery(transactional_db: None, tmp_path: Path) -> Iterator[Celery]:
    """Real Celery processes reading a queue of this test's own; this process sends to it too (the
    live server's on_commit dispatch runs here). Stopped before the database is flushed."""
    if not settings.REDIS_URL:
        pytest.fail("the worker suite needs a Redis broker: run it with REDIS_URL set (make test does)")
    queue = f"test-{uuid.uuid4().hex[:12]}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "gpuplatform.settings",
        "DATABASE_URL": database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT_S),
        "ADMISSION_LOOP_SECONDS": "1",
        "CLUSTER_ALLOW_LOOPBACK": "1",
        "DATABASE_CONN_MAX_AGE": "0",
    }
    before = current_app.conf.task_default_queue
    current_app.conf.task_default_queue = queue
    runner = Celery(queue=queue, env=env, tmp=tmp_path)
    try:
        yield runner
    finally:
        current_app.conf.task_default_queue = before
        for proc in reversed(runner.started):
            proc.stop()
        for proc in runner.started:  # shown by pytest when the test failed
            print(f"--- {proc.log.name}\n{proc.log.read_text()[-4000:]}")
