"""A period's report as a job: build the lines (while the period is not closed), then write the
CSV, XLSX and FOCUS files, recording progress on the job row the UI polls.

Requested by finance or platform-admins, audited; run by the Celery task ``metering.build_report``
by id. Idempotent: a finished job is left as it is; a job whose worker died mid-way is taken up
again from the start by the redelivered task (the build replaces the lines, the files are rewritten
whole), and the same ledger gives byte-identical files.
"""

from __future__ import annotations

import hashlib
import tempfile
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import IO, Any

from django.core.files import File
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from gpuplatform.audit.services import record_event, snapshot
from gpuplatform.errors import Conflict, Forbidden, NotFound
from metering.exports.focus_sql import focus_export
from metering.exports.formats import csv_chunks
from metering.exports.lines import cost_centre_totals, export_lines
from metering.exports.xlsx import write_xlsx
from metering.models import (
    BillingPeriod,
    ExportFormat,
    JobState,
    PeriodState,
    ReportFile,
    ReportJob,
    ReportLine,
)
from metering.services.node_split import node_weights
from metering.services.reports import build_period_report, idle_mode_of

STALE = timedelta(minutes=30)  # a running job silent this long lost its worker (acks_late redelivers)
AUDITED = ("state", "progress", "idle", "lines", "error")
_STEPS = (  # (format, progress after it)
    (ExportFormat.CSV, 60),
    (ExportFormat.XLSX, 85),
    (ExportFormat.FOCUS, 99),
)


def request_report_job(*, actor: Any, period_id: uuid.UUID, idle: str | None = None) -> ReportJob:
    """A new queued job for the period (the adapter then queues ``metering.build_report``). A job
    already queued or running for the period is returned instead: a double click builds once.
    Locks the period; finance and platform-admins only; audited."""
    if not (getattr(actor, "is_finance", False) or getattr(actor, "is_platform_admin", False)):
        raise Forbidden("Only finance and platform-admins build reports.")
    with transaction.atomic():
        period = BillingPeriod.objects.select_for_update().filter(pk=period_id).first()
        if period is None:
            raise NotFound("No such billing period.")
        if idle is not None and period.state != PeriodState.CLOSED:
            idle_mode_of(period, idle)  # refuses an unknown mode before anything is queued
        if period.state == PeriodState.CLOSED:
            # A closed period's lines are frozen with the idle option it closed with: its files can
            # only be those. A job asking for another would say one thing and deliver the other.
            frozen = idle_mode_of(period, None)
            if idle not in (None, "", frozen):
                raise Conflict(
                    f"billing period {period.label} closed with {frozen} idle: its report cannot be "
                    f"rebuilt {idle}",
                    code="period_closed",
                    field="idle",
                )
            idle = frozen
        pending = (
            ReportJob.objects.filter(period=period, state__in=(JobState.QUEUED, JobState.RUNNING))
            .order_by("created_at")
            .first()
        )
        if pending is not None:
            return pending
        job = ReportJob.objects.create(period=period, idle=idle or "", requested_by=actor, step="queued")
        record_event(actor=actor, action="report_job.requested", obj=job, after=snapshot(job, AUDITED))
    return job


def run_report_job(*, job_id: uuid.UUID, now: Callable[[], datetime] = timezone.now) -> ReportJob:
    """Claim the job by a conditional update (queued, or running but silent for STALE: its worker
    was lost), build and write its files. A job another worker holds, or a finished one, is
    returned untouched: a duplicate delivery does nothing."""
    started = now()
    claimed = (
        ReportJob.objects.filter(pk=job_id)
        .filter(Q(state=JobState.QUEUED) | Q(state=JobState.RUNNING, started_at__lt=started - STALE))
        .update(state=JobState.RUNNING, started_at=started, progress=0, step="starting", error="")
    )
    job = ReportJob.objects.select_related("period").get(pk=job_id)
    if not claimed:
        return job
    try:
        period = job.period
        if period.state != PeriodState.CLOSED:
            _progress(job, 5, "reading the ledger")

            def read(done: int, of: int) -> None:  # 5 % .. 40 % while the ledger is read
                if of > 1:
                    _progress(job, 5 + 35 * done // of, f"reading the ledger: {done} of {of} slices")

            period = build_period_report(period_id=period.pk, at=now(), idle=job.idle or None, progress=read)
        else:
            _progress(job, 5, "the period is closed: exporting its frozen lines")
        count = ReportLine.objects.filter(period=period).count()
        _progress(job, 40, f"{count} lines")
        for fmt, after in _STEPS:
            _write_file(job=job, period=period, fmt=fmt)
            _progress(job, after, f"{fmt} written")
        with transaction.atomic():
            before = snapshot(job, AUDITED)
            job.state, job.progress, job.step, job.lines = JobState.DONE, 100, "done", count
            job.finished_at = now()
            job.save(update_fields=["state", "progress", "step", "lines", "finished_at"])
            record_event(
                actor=None, action="report_job.done", obj=job, before=before, after=snapshot(job, AUDITED)
            )
    except Exception as error:  # recorded on the job for the UI, then re-raised for the worker's log
        with transaction.atomic():
            before = snapshot(job, AUDITED)
            job.state, job.error, job.finished_at = JobState.FAILED, str(error)[:2000], now()
            job.save(update_fields=["state", "error", "finished_at"])
            record_event(
                actor=None, action="report_job.failed", obj=job, before=before, after=snapshot(job, AUDITED)
            )
        raise
    return job


def _progress(job: ReportJob, percent: int, step: str) -> None:
    job.progress, job.step = percent, step
    ReportJob.objects.filter(pk=job.pk).update(progress=percent, step=step)


def period_chunks(period: BillingPeriod, fmt: str) -> Iterator[bytes]:
    if fmt == ExportFormat.FOCUS:
        lines = ReportLine.objects.filter(period=period)
        return focus_export(lines, nodes=node_weights(lines))
    return csv_chunks(export_lines(ReportLine.objects.filter(period=period)))


def write_period_xlsx(out: IO[bytes], *, period: BillingPeriod, lines: Any = None) -> None:
    rows = export_lines(lines if lines is not None else ReportLine.objects.filter(period=period))
    built = period.report_built_at or period.ends_at
    meta = {
        "Period": period.label,
        "From": period.starts_at.isoformat(),
        "To": period.ends_at.isoformat(),
        "Timezone": period.timezone,
        "State": period.state,
        "Report built": built.isoformat(),
        "Idle capacity": str((period.summary or {}).get("idle", "central")),
    }
    summary = period.summary or {}
    if summary:  # a tenant's workbook has no summary: no other centre's totals either
        summary = {**summary, **cost_centre_totals(period)}
    write_xlsx(out, lines=rows, meta=meta, summary=summary, built_at=built)


def _write_file(*, job: ReportJob, period: BillingPeriod, fmt: str) -> ReportFile:
    suffix = "xlsx" if fmt == ExportFormat.XLSX else "csv"
    name = f"{period.label}-{'focus' if fmt == ExportFormat.FOCUS else 'report'}.{suffix}"
    digest = hashlib.sha256()
    with tempfile.TemporaryFile() as tmp:
        if fmt == ExportFormat.XLSX:
            write_period_xlsx(tmp, period=period)
        else:
            for chunk in period_chunks(period, fmt):
                tmp.write(chunk)
        size = tmp.tell()
        tmp.seek(0)
        for block in iter(lambda: tmp.read(1 << 16), b""):
            digest.update(block)
        tmp.seek(0)
        ReportFile.objects.filter(job=job, format=fmt).delete()  # a resumed job rewrites its files
        record = ReportFile(
            job=job, period=period, format=fmt, filename=name, sha256=digest.hexdigest(), size=size
        )
        record.file.save(name, File(tmp), save=False)
        record.save()
    return record
