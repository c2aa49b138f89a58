"""A period's report build as a job the UI polls, and the export files it stores.

One job builds (or, once the period is closed, re-reads) the report and writes its CSV, XLSX and
FOCUS files under MEDIA_ROOT. Jobs and files carry every tenant's lines: platform objects (finance
and platform-admins); a tenant exports its own lines through the report API instead.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from inventory.scoping import PlatformOnlyQuerySet


class JobState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class ExportFormat(models.TextChoices):
    CSV = "csv", "CSV"
    XLSX = "xlsx", "XLSX"
    FOCUS = "focus", "FOCUS 1.2 CSV"


class ReportJob(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    period = models.ForeignKey("metering.BillingPeriod", on_delete=models.PROTECT, related_name="jobs")
    state = models.CharField(max_length=8, choices=JobState.choices, default=JobState.QUEUED)
    idle = models.CharField(max_length=12, blank=True)  # central/distributed; "" = as last built
    progress = models.PositiveSmallIntegerField(default=0)  # percent
    step = models.CharField(max_length=120, blank=True)
    lines = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        "accounts.User", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=models.Q(progress__lte=100), name="report_job_progress_percent")
        ]

    def __str__(self) -> str:
        return f"report {self.period_id} {self.state} {self.progress}%"

    @property
    def finished(self) -> bool:
        return self.state in (JobState.DONE, JobState.FAILED)


class ReportFile(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    job = models.ForeignKey(ReportJob, on_delete=models.CASCADE, related_name="files")
    period = models.ForeignKey("metering.BillingPeriod", on_delete=models.PROTECT, related_name="files")
    format = models.CharField(max_length=8, choices=ExportFormat.choices)
    file = models.FileField(upload_to="reports/%Y/%m/")
    filename = models.CharField(max_length=200)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveBigIntegerField()
    created_at = models.DateTimeField(default=timezone.now)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["format"]
        constraints = [models.UniqueConstraint(fields=["job", "format"], name="report_file_per_format")]

    def __str__(self) -> str:
        return self.filename
