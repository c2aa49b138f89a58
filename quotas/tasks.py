"""Celery tasks of quotas: thin wrappers, taking ids, idempotent, with stable names."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from quotas.materialise import materialise_request
from quotas.runner.loop import run_admission_loop


@shared_task(name="quotas.materialise_request")
def materialise_request_task(request_id: str) -> dict[str, Any]:
    """Apply, lower or remove one request's cluster objects; safe to run twice."""
    return materialise_request(request_id=request_id)


@shared_task(name="quotas.materialise_requests")
def materialise_requests_task(request_ids: list[str]) -> dict[str, Any]:
    """The requests one decision moved, in one message: each is tried, each safe to run twice; if any
    failed, the task fails after trying the rest, and a retry redoes only what is still undone."""
    done, failed = {}, []
    for request_id in request_ids:
        try:
            done[request_id] = materialise_request(request_id=request_id)
        except Exception as exc:  # re-raised below, once the others had their turn
            failed.append(exc)
    if failed:
        raise failed[0]
    return done


@shared_task(name="quotas.run_admission_loop")
def run_admission_loop_task() -> dict[str, Any]:
    """Expire ended requests and decide every cohort with pending requests again."""
    return run_admission_loop()
