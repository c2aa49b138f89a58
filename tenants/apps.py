from django.apps import AppConfig


class TenantsConfig(AppConfig):
    name = "tenants"
    verbose_name = "Tenants, quotas and admission"

    def ready(self) -> None:
        # Register the task names that tenants.dispatch queues by name.
        from tenants import tasks  # noqa: F401
