"""The Celery app. Tasks take ids, have stable explicit names and are idempotent (DESIGN §6)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")

app = Celery("gpuplatform")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Task durations, failures and the worker's scrape endpoint (signal receivers, connected on import).
import gpuplatform.observability.task_metrics  # noqa: E402, F401
