"""A real Prometheus for the collection tests: series generated as OpenMetrics, backfilled into a
TSDB with ``promtool tsdb create-blocks-from openmetrics``, served by the Debian ``prometheus`` binary on
a free port (no systemd), torn down after the session."""

from __future__ import annotations

import math
import shutil
import socket
import subprocess
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import requests

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"


@dataclass
class Series:
    name: str
    labels: dict[str, str]
    samples: list[tuple[float, float]] = field(default_factory=list)  # (unix seconds, value)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _value(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    return repr(float(v))


def openmetrics(series: Iterable[Series]) -> str:
    """OpenMetrics text: each family together (the format requires it), samples in time order."""
    families: dict[str, list[Series]] = defaultdict(list)
    for s in series:
        families[s.name].append(s)
    lines = []
    for name in sorted(families):
        lines.append(f"# TYPE {name} gauge")
        for s in families[name]:
            labels = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(s.labels.items()))
            for ts, v in sorted(s.samples):
                lines.append(f"{name}{{{labels}}} {_value(v)} {ts:.3f}")
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrometheusServer:
    """Backfill then serve. ``url`` answers the query API once ``start`` returns."""

    def __init__(
        self, series: Iterable[Series], flags: Iterable[str] = (), source: Path | None = None
    ) -> None:
        self.flags = list(flags)
        self.source = source  # an OpenMetrics file already written (the benchmark streams one)
        self.dir = Path(tempfile.mkdtemp(prefix="metcol-prom-"))
        self.series = list(series)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> PrometheusServer:
        data = self.dir / "data"
        source = self.source or self.dir / "series.om"
        if self.source is None:
            source.write_text(openmetrics(self.series))
        subprocess.run(
            [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
            check=True,
            capture_output=True,
        )
        config = self.dir / "prometheus.yml"
        config.write_text("global:\n  scrape_interval: 1m\nscrape_configs: []\n")
        self.log = open(self.dir / "prometheus.log", "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={config}",
                f"--storage.tsdb.path={data}",
                "--storage.tsdb.retention.time=100y",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--web.enable-lifecycle",
                *self.flags,
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited: {(self.dir / 'prometheus.log').read_text()[-2000:]}")
            try:
                if requests.get(f"{self.url}/-/ready", timeout=1).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.2)
        raise RuntimeError("prometheus did not become ready in 60 s")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def serve(series: Iterable[Series], flags: Iterable[str] = ()) -> Iterator[PrometheusServer]:
    server = PrometheusServer(series, flags).start()
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def silent_server() -> Iterator[str]:
    """A TCP peer that accepts connections and never answers: a Prometheus too slow to wait for."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()


def every(start: datetime, end: datetime, step: int = 60) -> list[float]:
    """Scrape times from start (inclusive) to end (exclusive), every step seconds."""
    t0, t1 = start.timestamp(), end.timestamp()
    n = int((t1 - t0) // step)
    return [t0 + k * step for k in range(n)]
