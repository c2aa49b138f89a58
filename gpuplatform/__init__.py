"""gpuplatform: the Django project (settings, Celery app, auth, scoping, API conventions, audit).

Importing this package loads nothing: the pure modules below it (``gpuplatform.quantity``) must not
drag Django or Celery in. The Celery app is loaded by ``GpuplatformConfig.ready`` in every Django
process and found by ``celery -A gpuplatform`` in ``gpuplatform/celery.py``.
"""
