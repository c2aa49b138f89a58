from django.apps import AppConfig


class InventoryConfig(AppConfig):
    name = "inventory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from inventory.signals import on_namespace_owner_changed
        from tenants.signals import namespace_owner_changed

        namespace_owner_changed.connect(on_namespace_owner_changed, dispatch_uid="inventory-reattribute")

        from gpuplatform.metrics import register_collector
        from inventory.metrics import collect

        register_collector("inventory", collect)
