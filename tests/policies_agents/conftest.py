"""Processes for the agent suites: the ASGI server (uvicorn, as production runs it) on the test
database, and node agents as separate `gpuplatform-agent` processes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from django.conf import settings
from django.db import connection

from policies import signing

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def database_url() -> str:
    db = connection.settings_dict
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def server_env(**extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "SECRET_KEY": settings.SECRET_KEY,
        "PYTHONPATH": str(REPO),
        **extra,
    }


class PushServer:
    def __init__(self, port: int, log: Path) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "gpuplatform.asgi:application",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--log-level",
                "warning",
            ],
            cwd=REPO,
            env=server_env(),
            stdout=self.log.open("ab"),
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if requests.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except requests.RequestException:
                pass
            if self.process.poll() is not None:
                raise RuntimeError(f"uvicorn exited: {self.log.read_text()[-3000:]}")
            time.sleep(0.2)
        raise RuntimeError("uvicorn did not start")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def push_server(transactional_db: Any, tmp_path: Path) -> Iterator[PushServer]:
    server = PushServer(free_port(), tmp_path / "uvicorn.log")
    server.start()
    yield server
    server.stop()


class AgentProcess:
    def __init__(self, config_path: Path, log: Path) -> None:
        self.config_path = config_path
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "nodeagent", "--config", str(self.config_path), "--log-level", "INFO"],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdout=self.log.open("ab"),
            stderr=subprocess.STDOUT,
        )

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@pytest.fixture
def public_key_file(tmp_path: Path) -> Path:
    path = tmp_path / "policy-signing.pub"
    path.write_text(signing.public_key_pem())
    return path


@pytest.fixture
def agent_factory(tmp_path: Path, public_key_file: Path) -> Iterator[Callable[..., AgentProcess]]:
    started: list[AgentProcess] = []

    def make(
        *,
        server: str,
        cluster: str,
        node: str,
        token: str,
        kubeconfig: Path | None = None,
        hooks: list[dict[str, Any]] | None = None,
        gpus: list[dict[str, Any]] | None = None,
        appliers: list[str] | None = None,
        start: bool = True,
    ) -> AgentProcess:
        home = tmp_path / f"agent-{node}"
        home.mkdir(exist_ok=True)
        (home / "bootstrap-token").write_text(token)
        config = {
            "server_url": server,
            "public_key_file": str(public_key_file),
            "state_dir": str(home / "state"),
            "files_dir": str(home / "etc"),
            "cluster": cluster,
            "node": node,
            "bootstrap_token_file": str(home / "bootstrap-token"),
            "appliers": appliers or (["files", "gpu-operator"] if kubeconfig else ["files"]),
            "hooks": hooks or [],
            "kubeconfig": str(kubeconfig) if kubeconfig else None,
            "mig_state_timeout_seconds": 30,
            "nvml": {
                "backend": "simulated",
                "gpus": gpus or [{"name": "NVIDIA H100 80GB HBM3", "memory_mib": 81559, "count": 8}],
            },
            "poll_timeout_seconds": 5,
            "heartbeat_seconds": 2,
            "max_backoff_seconds": 2,
        }
        path = home / "agent.yaml"
        path.write_text(yaml.safe_dump(config))
        agent = AgentProcess(path, home / "agent.log")
        started.append(agent)
        if start:
            agent.start()
        return agent

    yield make
    for agent in started:
        agent.stop()


def wait_for(
    predicate: Callable[[], Any],
    *,
    seconds: float,
    every: float = 0.3,
    step: Callable[[], Any] | None = None,
    why: Callable[[], str] = lambda: "",
) -> Any:
    """Poll until ``predicate`` is truthy (calling ``step`` between tries); fail with ``why`` after
    ``seconds``. A deadline, not a timing assertion: what is checked is that it happens at all."""
    deadline = time.monotonic() + seconds
    while True:
        if step is not None:
            step()
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"not reached in {seconds}s: {why()}")
        time.sleep(every)
