"""Celery's side of the service's metrics: each task's duration and outcome, failures by exception
type, the task id as the request id of its logs; and the worker's own scrape endpoint.

A prefork worker runs tasks in child processes, so with ``PROMETHEUS_MULTIPROC_DIR`` set the children
write their samples there and the worker's endpoint (``CELERY_METRICS_PORT``) sums them."""

from __future__ import annotations

import contextlib
import contextvars
import hmac
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from celery.signals import task_failure, task_postrun, task_prerun, worker_ready

from gpuplatform.observability.metrics import count_task_failure, exposition, observe_task
from gpuplatform.observability.request_id import bind_request_id, unbind_request_id

_running: dict[str, tuple[float, contextvars.Token[str]]] = {}
_OUTCOMES = {"SUCCESS": "success", "FAILURE": "failure", "RETRY": "retry", "REJECTED": "failure"}


@task_prerun.connect
def _started(task_id: str | None = None, **_: Any) -> None:
    if task_id:
        _running[task_id] = (time.perf_counter(), bind_request_id(task_id))


@task_postrun.connect
def _finished(task_id: str | None = None, task: Any = None, state: str | None = None, **_: Any) -> None:
    started = _running.pop(task_id or "", None)
    if started is None:
        return
    began, token = started
    observe_task(
        task=getattr(task, "name", "unknown"),
        outcome=_OUTCOMES.get(state or "", "other"),
        seconds=time.perf_counter() - began,
    )
    # A token made in another context (eager calls) cannot be reset: the id stays until replaced.
    with contextlib.suppress(ValueError):
        unbind_request_id(token)


@task_failure.connect
def _failed(sender: Any = None, exception: BaseException | None = None, **_: Any) -> None:
    count_task_failure(task=getattr(sender, "name", "unknown"), error=exception)


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.split("?")[0] != "/metrics":
            self.send_error(404)
            return
        # Like the web's /metrics: with METRICS_TOKEN set (the chart always sets it) only its bearer
        # scrapes; the chart's ServiceMonitor sends it.
        token = os.environ.get("METRICS_TOKEN", "")
        sent = self.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if token and not hmac.compare_digest(sent.encode(), token.encode()):
            self.send_error(401)
            return
        body, content_type = exposition()
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


def serve_worker_metrics(port: int, host: str = "0.0.0.0") -> ThreadingHTTPServer:  # noqa: S104
    server = ThreadingHTTPServer((host, port), _Handler)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server


@worker_ready.connect
def _serve(**_: Any) -> None:
    port = os.environ.get("CELERY_METRICS_PORT")
    if port:
        serve_worker_metrics(int(port))
