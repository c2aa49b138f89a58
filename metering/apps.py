from django.apps import AppConfig


class MeteringConfig(AppConfig):
    name = "metering"
    verbose_name = "Metering and chargeback"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Register the Celery task names (metering.meter_hour, ...) with the app.
        from metering import tasks  # noqa: F401
        from metering.services.burn import burned_from_ledger
        from quotas.ports import set_burn_source

        # Admission's budget burn comes from the usage ledger (quotas defines the port).
        set_burn_source(burned_from_ledger)
