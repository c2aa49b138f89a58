from django.apps import AppConfig


class InventoryConfig(AppConfig):
    name = "inventory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from inventory.signals import on_namespace_owner_changed
        from tenants.signals import namespace_owner_changed

        namespace_owner_changed.connect(on_namespace_owner_changed, dispatch_uid="inventory-reattribute")

        from gpuplatform.observability.metrics import register_collector
        from inventory.metrics import collect

        register_collector("inventory", collect)
        from gpuplatform.ui.panels import TENANT, register_panel
        from inventory import overview, tenant_page

        register_panel(name="fleet", template=overview.TEMPLATE, context=overview.overview_context, order=20)
        register_panel(
            name="holdings",
            template=tenant_page.TEMPLATE,
            context=tenant_page.tenant_context,
            order=20,
            page=TENANT,
        )

        from gpuplatform.ui.attention import register_attention
        from inventory.attention import attention

        register_attention(name="inventory", source=attention)

        from gpuplatform.audit.naming import by_field, register_names
        from inventory.models import Cluster, NodePool

        register_names(
            object_type="inventory.cluster", names=by_field(Cluster, "name"), fields=("cluster", "cluster_id")
        )
        register_names(
            object_type="inventory.nodepool", names=by_field(NodePool, "name"), fields=("pool", "pool_id")
        )
