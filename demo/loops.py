"""The demo's background loops: what `celery beat` and the sync process run in production, as
threads of the demo's one process (tasks run inline there, without a broker).

Each loop survives its failures: an iteration that raises (SQLite's "database is locked" while a
long writer holds the file, a cluster that stopped answering) is logged and tried again after an
exponential backoff with jitter, never ending the thread. A dead loop is what the heartbeats show;
a demo should not make one out of a busy database."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

from celery.schedules import BaseSchedule, maybe_schedule
from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

from gpuplatform.celery import app as celery_app
from inventory.models import Cluster
from inventory.sync.runner import backoff_delay
from inventory.sync.service import keep_synced

log = logging.getLogger(__name__)


def keep_running(
    *, name: str, iteration: Callable[[], Any], stop: threading.Event, pause: Callable[[], float]
) -> None:
    """Call ``iteration`` until ``stop`` is set, waiting ``pause()`` seconds after each success and
    a growing backoff after each failure (logged with its traceback)."""
    failures = 0
    while not stop.is_set():
        try:
            iteration()
        except Exception:  # the loop must outlive any one failure, as a supervised process would
            wait = backoff_delay(failures)
            failures += 1
            log.exception("demo loop %s failed (%d in a row); again in %.1f s", name, failures, wait)
        else:
            failures, wait = 0, pause()
        finally:
            close_old_connections()  # a connection broken mid-failure is not reused
        stop.wait(max(wait, 0.0))


def sync_loop(*, cluster: Cluster, stop: threading.Event, name: str = "demo-inventory") -> threading.Thread:
    """The cluster's list-then-watch; started afresh (a cold list) after any failure."""
    return threading.Thread(
        target=keep_running,
        kwargs={
            "name": "inventory-sync",
            "iteration": lambda: keep_synced(cluster=Cluster.objects.get(pk=cluster.pk), stop=stop),
            "stop": stop,
            "pause": lambda: 1.0,
        },
        name=name,
        daemon=True,
    )


def beat_loops(*, stop: threading.Event) -> list[threading.Thread]:
    """One thread per entry of CELERY_BEAT_SCHEDULE (SLO evaluation, the admission loop, rollouts,
    silent agents, hourly metering...), each running its task inline on the entry's schedule: a
    long one (an hour metered) delays no other."""
    celery_app.loader.import_default_modules()  # the tasks modules, as a worker loads them
    return [
        threading.Thread(
            target=_run_entry, args=(entry_name, entry, stop), name=f"demo-beat-{entry_name}", daemon=True
        )
        for entry_name, entry in settings.CELERY_BEAT_SCHEDULE.items()
    ]


def _run_entry(entry_name: str, entry: dict[str, Any], stop: threading.Event) -> None:
    schedule: BaseSchedule = maybe_schedule(entry["schedule"], app=celery_app)  # type: ignore[arg-type,assignment]
    task = celery_app.tasks[str(entry["task"])]
    last_run: list[datetime] = [timezone.now()]  # as beat: the first run one period after the start

    def run_task() -> None:
        last_run[0] = timezone.now()
        task.apply(throw=True)

    def until_due() -> float:
        return float(schedule.remaining_estimate(last_run[0]).total_seconds())

    stop.wait(until_due())
    keep_running(name=entry_name, iteration=run_task, stop=stop, pause=until_due)
