"""A real Prometheus (Debian's `prometheus` package) for tests: started on a free port with a config
of the test's own, stopped at the end. Used where the suite checks what a Prometheus does with our
metrics (scraping /metrics, evaluating deploy/prometheus rules)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests
import yaml

REPO = Path(__file__).resolve().parents[1]
RULES = REPO / "deploy" / "prometheus" / "gpuplatform-rules.yaml"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def binary(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} is missing: `make system-deps` installs Debian's prometheus package")
    return found


@contextmanager
def running_prometheus(
    tmp: Path, *, targets: list[str], rules: list[Path] | None = None, interval: str = "1s"
) -> Iterator[str]:
    port = free_port()
    config: dict[str, Any] = {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "rule_files": [str(p) for p in rules or []],
        "scrape_configs": [
            {"job_name": "gpuplatform", "metrics_path": "/metrics", "static_configs": [{"targets": targets}]}
        ],
    }
    config_file = tmp / "prometheus.yml"
    config_file.write_text(yaml.safe_dump(config))
    log = (tmp / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [
            binary("prometheus"),
            f"--config.file={config_file}",
            f"--storage.tsdb.path={tmp / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"prometheus exited: {(tmp / 'prometheus.log').read_text()[-2000:]}")
            try:
                if requests.get(f"{url}/-/ready", timeout=1).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("prometheus did not become ready in 60 s")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def query(url: str, expr: str) -> list[dict[str, Any]]:
    body = requests.get(f"{url}/api/v1/query", params={"query": expr}, timeout=10).json()
    assert body["status"] == "success", body
    return list(body["data"]["result"])


def eventually_query(url: str, expr: str, *, within: float = 30.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + within
    while True:
        result = query(url, expr)
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.5)
