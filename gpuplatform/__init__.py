"""gpuplatform: the Django project (settings, Celery app, auth, scoping, API conventions, audit)."""

from gpuplatform.celery import app as celery_app

__all__ = ["celery_app"]
