from django.apps import AppConfig


class QuotasConfig(AppConfig):
    name = "quotas"
    verbose_name = "Quotas, queues and admission"

    def ready(self) -> None:
        # Register the task names that quotas.dispatch queues by name.
        from quotas import tasks  # noqa: F401
        from quotas.signals import on_tenant_state_changed
        from tenants.signals import tenant_state_changed

        tenant_state_changed.connect(on_tenant_state_changed, dispatch_uid="quotas-withdraw-suspended")

        from gpuplatform.metrics import register_collector
        from quotas.metrics import collect

        register_collector("quotas", collect)
