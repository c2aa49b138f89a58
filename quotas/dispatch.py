"""The quotas app's Celery tasks, queued after commit by their stable names
(``gpuplatform.db.after_commit`` says why by name and why after commit)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from gpuplatform.db.after_commit import queue_after_commit
from quotas.kueue_apply.triggers import queue_kueue_apply_for_requests

MATERIALISE = "quotas.materialise_requests"
ADMISSION_LOOP = "quotas.run_admission_loop"


def materialise_after_commit(request_ids: Iterable[uuid.UUID]) -> None:
    """Apply (or lower) the cluster objects of these requests once the decision is committed: one
    message for all of them (a cohort's loop pass may move dozens; a message costs ~1 ms to send).
    On a kueue cluster there is nothing to write per request; its Kueue apply is queued instead, once
    per cluster, and raises or lowers the tenants' ClusterQueues (docs/kueue.md)."""
    ids = [str(request_id) for request_id in sorted(set(request_ids))]
    if ids:
        queue_after_commit(MATERIALISE, ids)
        queue_kueue_apply_for_requests(ids)


def admission_loop_after_commit() -> None:
    """Quota, priorities or capacity changed: decide the pending requests again."""
    queue_after_commit(ADMISSION_LOOP)
