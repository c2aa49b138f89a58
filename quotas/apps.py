from django.apps import AppConfig


class QuotasConfig(AppConfig):
    name = "quotas"
    verbose_name = "Quotas, queues and admission"

    def ready(self) -> None:
        # Register the task names that quotas.dispatch queues by name.
        from quotas import tasks  # noqa: F401
