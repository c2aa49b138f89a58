from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "gpuplatform.audit"
    label = "audit"
    verbose_name = "Audit log"

    def ready(self) -> None:
        # The admin site has discovered every app's admin by now (its own ready() comes first in
        # INSTALLED_APPS): put the audit mixin in front of each one, ours and third parties' alike
        # (auth's groups, django-axes' lockouts), so no way through /admin/ escapes the log.
        from django.contrib import admin

        from gpuplatform.audit.admin import AuditedAdminMixin, audited

        for model, model_admin in list(admin.site._registry.items()):
            if not isinstance(model_admin, AuditedAdminMixin):
                admin.site.unregister(model)
                admin.site.register(model, audited(type(model_admin)))
