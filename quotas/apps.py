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

        from gpuplatform.observability.metrics import register_collector
        from quotas.metrics import collect

        register_collector("quotas", collect)
        from gpuplatform.ui.panels import TENANT, register_panel
        from quotas import overview, tenant_page

        register_panel(name="demand", template=overview.TEMPLATE, context=overview.overview_context, order=25)
        register_panel(
            name="quotas",
            template=tenant_page.TEMPLATE,
            context=tenant_page.tenant_context,
            order=10,
            page=TENANT,
        )

        from gpuplatform.ui.attention import register_attention
        from quotas.attention import attention

        register_attention(name="quotas", source=attention)
