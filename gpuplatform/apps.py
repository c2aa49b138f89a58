from django.apps import AppConfig


class GpuplatformConfig(AppConfig):
    name = "gpuplatform"
    verbose_name = "gpuplatform"

    def ready(self) -> None:
        # Registers the ``__any`` lookup on every field before any query is built.
        from gpuplatform import lookups  # noqa: F401
