"""The Celery app. Tasks take ids, have stable explicit names and are idempotent (DESIGN §6)."""

import logging
import os
import threading
import uuid
from typing import Any

from celery import Celery, Task
from django.conf import settings
from django.db import close_old_connections

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")
logger = logging.getLogger(__name__)


class PlatformTask(Task):
    """Where tasks run eagerly (the demo: no broker, no worker), a task named in
    ``settings.EAGER_TASKS_IN_THREADS`` runs in a thread of its own rather than inside its caller:
    a report build takes minutes on SQLite, and the request that asked for it must answer at once
    (the page then polls the job). Everywhere else, Celery's own ``apply_async``."""

    def apply_async(  # type: ignore[override]  # Celery's own keywords pass through **options
        self, args: Any = None, kwargs: Any = None, task_id: str | None = None, **options: Any
    ) -> Any:
        if self.app.conf.task_always_eager and self.name in getattr(settings, "EAGER_TASKS_IN_THREADS", ()):
            task_id = task_id or str(uuid.uuid4())
            threading.Thread(
                target=self._apply_in_thread,
                args=(args, kwargs, task_id),
                name=f"task-{self.name}",
                daemon=True,
            ).start()
            return self.AsyncResult(task_id)
        return super().apply_async(args, kwargs, task_id=task_id, **options)

    def _apply_in_thread(self, args: Any, kwargs: Any, task_id: str) -> None:
        try:
            result = self.apply(args, kwargs, task_id=task_id)
            if result.failed():  # no worker log to land in: this process's own
                logger.error("task %s[%s] failed: %r", self.name, task_id, result.result)
        finally:
            close_old_connections()  # the thread's own connection, not left for the server to find


app = Celery("gpuplatform", task_cls=PlatformTask)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Task durations, failures and the worker's scrape endpoint (signal receivers, connected on import).
import gpuplatform.observability.task_metrics  # noqa: E402, F401
