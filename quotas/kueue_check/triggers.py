"""Queue the admission check's pass when the inventory sync sees a Workload waiting on it."""

from __future__ import annotations

from typing import Any

from quotas.kueue_check.service import queue_check


def on_kueue_check_pending(*, cluster_id: str, **kwargs: Any) -> None:
    queue_check(cluster_id=cluster_id)
