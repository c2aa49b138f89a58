"""Celery tasks of tenants: thin wrappers, taking ids, idempotent, with stable names."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from tenants.admission_loop import run_admission_loop
from tenants.materialise import materialise_request


@shared_task(name="tenants.materialise_request")
def materialise_request_task(request_id: str) -> dict[str, Any]:
    """Apply, lower or remove one request's cluster objects; safe to run twice."""
    return materialise_request(request_id=request_id)


@shared_task(name="tenants.run_admission_loop")
def run_admission_loop_task() -> dict[str, Any]:
    """Expire ended requests and decide every cohort with pending requests again."""
    return run_admission_loop()
