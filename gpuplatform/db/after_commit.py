"""Queue a Celery task once the current transaction commits: the one way services hand work on.

By the task's stable name, so a service need not import the tasks module that imports it (no import
cycle), and eager mode (the demo, the tests) still runs it in-process. Every app's config imports its
tasks module at start-up, so the names are registered in every process. After commit, because a
worker that starts before the commit would not see the rows it is given; outside a transaction the
task is queued at once.
"""

from __future__ import annotations

from functools import partial

from celery import current_app
from django.db import transaction


def queue_after_commit(task: str, *args: object, **kwargs: object) -> None:
    """Send ``task`` (by name) with these arguments once the current transaction commits; nothing
    is sent if it rolls back. Arguments must be JSON-serialisable: ids, not objects."""
    transaction.on_commit(partial(_send, task, args, kwargs))


def _send(task: str, args: tuple[object, ...], kwargs: dict[str, object]) -> None:
    current_app.signature(task, args=args, kwargs=kwargs).delay()
