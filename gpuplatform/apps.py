from django.apps import AppConfig


class GpuplatformConfig(AppConfig):
    name = "gpuplatform"
    verbose_name = "gpuplatform"

    def ready(self) -> None:
        # Registers the ``__any`` lookup on every field before any query is built.
        # Makes the project's Celery app (broker and settings from Django) the current one in every
        # Django process, so tasks queued by name go to the configured broker. Loaded here rather than
        # in the package's __init__ so that importing a pure module of gpuplatform loads no Celery.
        from gpuplatform import celery  # noqa: F401
        from gpuplatform.db import lookups  # noqa: F401
        from gpuplatform.health.checks import collect_checks
        from gpuplatform.observability.metrics import register_collector

        register_collector("health", collect_checks)
