from django.apps import AppConfig

from gpuplatform.ui.panels import register_panel


class TenantsConfig(AppConfig):
    name = "tenants"
    verbose_name = "Tenants"

    def ready(self) -> None:
        # The panel reads models, which are importable only once the app registry is ready.
        from tenants.overview import TEMPLATE, overview_context
        from tenants.sso import checks  # noqa: F401 - registers the single sign-on checks

        register_panel(name="tenants", template=TEMPLATE, context=overview_context, order=10)

        from gpuplatform.audit.naming import by_field, register_names
        from tenants.models import Tenant

        register_names(
            object_type="tenants.tenant", names=by_field(Tenant, "slug"), fields=("tenant", "tenant_id")
        )
