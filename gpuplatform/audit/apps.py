from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "gpuplatform.audit"
    label = "audit"
    verbose_name = "Audit log"
