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

        # The Kueue apply follows every change to what it compiles (quotas/kueue_apply/triggers.py).
        from django.db.models.signals import post_delete, post_save

        from inventory.ports import enforcement_backend_changed
        from quotas.kueue_apply.triggers import on_catalogue_changed, on_enforcement_backend_changed
        from quotas.models import Flavor, PriorityClass, Queue, Quota
        from tenants.models import Tenant, TenantNamespace

        for model in (Flavor, Quota, Queue, PriorityClass, Tenant, TenantNamespace):
            for signal in (post_save, post_delete):
                signal.connect(on_catalogue_changed, sender=model, dispatch_uid=f"kueue-{model.__name__}")
        enforcement_backend_changed.connect(on_enforcement_backend_changed, dispatch_uid="kueue-switch")

        # gpuplatform's admission check decides Workloads the sync saw waiting on it.
        from inventory.ports import kueue_check_pending
        from quotas.kueue_check.triggers import on_kueue_check_pending

        kueue_check_pending.connect(on_kueue_check_pending, dispatch_uid="kueue-check-pending")

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
