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

        from gpuplatform.audit.naming import by_field, register_names
        from quotas.models import Flavor, PriorityClass, Queue
        from quotas.selectors import request_names

        register_names(object_type="quotas.capacityrequest", names=request_names, fields=("request",))
        register_names(object_type="quotas.flavor", names=by_field(Flavor, "name"), fields=("flavor",))
        register_names(
            object_type="quotas.priorityclass",
            names=by_field(PriorityClass, "name"),
            fields=("priority_class",),
        )
        register_names(object_type="quotas.queue", names=by_field(Queue, "name"), fields=("queue",))
