"""Queueing the quotas app's Celery tasks after commit, by their stable names.

Services look tasks up by name instead of importing ``quotas.tasks`` (which imports the services):
no import cycle, and eager mode (the demo) still runs them in-process. The app config imports the
tasks module at start-up so the names are registered in every process.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from functools import partial

from celery import current_app
from django.db import transaction

MATERIALISE = "quotas.materialise_requests"
ADMISSION_LOOP = "quotas.run_admission_loop"


def materialise_after_commit(request_ids: Iterable[uuid.UUID]) -> None:
    """Apply (or lower) the cluster objects of these requests once the decision is committed: one
    message for all of them (a cohort's loop pass may move dozens; a message costs ~1 ms to send)."""
    ids = [str(request_id) for request_id in sorted(set(request_ids))]
    if ids:
        transaction.on_commit(partial(_queue, MATERIALISE, ids))


def _queue(name: str, *args: object) -> None:
    current_app.tasks[name].delay(*args)


def admission_loop_after_commit() -> None:
    """Quota, priorities or capacity changed: decide the pending requests again."""
    transaction.on_commit(partial(_queue, ADMISSION_LOOP))
