from django.apps import AppConfig


class MeteringConfig(AppConfig):
    name = "metering"
    verbose_name = "Metering and chargeback"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from gpuplatform.ui.panels import register_panel
        from metering import tasks  # noqa: F401  (registers metering.meter_hour, ... with Celery)
        from metering.overview import TEMPLATE, overview_context
        from metering.services.burn import burned_from_ledger
        from quotas.ports import set_burn_source

        # Admission's budget burn comes from the usage ledger (quotas defines the port).
        set_burn_source(burned_from_ledger)
        register_panel(name="finance", template=TEMPLATE, context=overview_context, order=30)
        self._register_dashboards()

        from gpuplatform.observability.metrics import register_collector
        from metering.slos import tasks as slo_tasks  # noqa: F401  (registers metering.evaluate_slos, deliver_alert)
        from metering.slos.metrics import collect
        from metering.slos.slis import register

        register()
        register_collector("slos", collect)
        self._register_names()

    @staticmethod
    def _register_names() -> None:
        """The audit log names metering's objects (a period by its label, a report job by its
        period's) instead of printing their ids."""
        from gpuplatform.audit.naming import by_field, register_names
        from metering.models import BillingPeriod, ReportJob
        from metering.models.slos import AlertReceiver, Slo

        job_period = by_field(ReportJob, "period__label")
        register_names(
            object_type="metering.billingperiod", names=by_field(BillingPeriod, "label"), fields=("period",)
        )
        register_names(
            object_type="metering.reportjob",
            names=lambda ids: {pk: f"report of {label}" for pk, label in job_period(ids).items()},
        )
        register_names(object_type="metering.slo", names=by_field(Slo, "name"))
        register_names(object_type="metering.alertreceiver", names=by_field(AlertReceiver, "name"))

    @staticmethod
    def _register_dashboards() -> None:
        from gpuplatform.ui.attention import register_attention
        from gpuplatform.ui.panels import POOL_DASHBOARD, TENANT_DASHBOARD, register_panel
        from metering.dashboards import attention, pool, tenant

        for order, (name, template, context) in enumerate(
            (
                ("holding", tenant.HOLDING_TEMPLATE, tenant.holding_context),
                ("waits", tenant.WAITS_TEMPLATE, tenant.waits_context),
                ("budgets", tenant.BUDGETS_TEMPLATE, tenant.budgets_context),
                ("costs", tenant.COSTS_TEMPLATE, tenant.costs_context),
            )
        ):
            register_panel(
                name=name, template=template, context=context, order=order * 10, page=TENANT_DASHBOARD
            )
        register_panel(
            name="heatmap",
            template=pool.TEMPLATE,
            context=pool.heatmap_context,
            order=10,
            page=POOL_DASHBOARD,
        )
        register_attention(name="metering", source=attention.attention)
