from django.apps import AppConfig


class PoliciesConfig(AppConfig):
    name = "policies"
    verbose_name = "Sharing policies and node agents"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from policies import tasks  # noqa: F401  (registers policies.apply_admission, ... with Celery)
        from policies.slis import register

        register()  # the policy rollout SLI, for metering's SLOs

        from gpuplatform.ui.attention import register_attention
        from gpuplatform.ui.panels import POOL_DASHBOARD, register_panel
        from policies import dashboard

        register_panel(
            name="policy-state",
            template=dashboard.TEMPLATE,
            context=dashboard.pool_state_context,
            order=20,
            page=POOL_DASHBOARD,
        )
        register_attention(name="policies", source=dashboard.attention)
