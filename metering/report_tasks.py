"""The report-building task (found by the worker through metering.tasks)."""

from __future__ import annotations

import uuid
from typing import Any

from celery import shared_task

from metering.services.report_jobs import run_report_job


@shared_task(name="metering.build_report")
def build_report_task(job_id: str) -> dict[str, Any]:
    """Build one report job by id; a finished job is left as it is (idempotent)."""
    job = run_report_job(job_id=uuid.UUID(job_id))
    return {"job": job_id, "state": job.state, "lines": job.lines}
