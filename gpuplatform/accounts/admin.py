from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.contrib.auth.admin import UserAdmin
from django.db import transaction
from django.http import HttpRequest, HttpResponse

from gpuplatform.accounts.models import User
from gpuplatform.audit.admin import AuditedAdminMixin
from gpuplatform.audit.services import record_event


@admin.register(User)
class PlatformUserAdmin(AuditedAdminMixin, UserAdmin[User]):
    list_display = ("username", "email", "platform_role", "is_service_account", "is_active")
    list_filter = ("platform_role", "is_service_account", "is_active")
    fieldsets = (*UserAdmin.fieldsets, ("Platform", {"fields": ("platform_role", "is_service_account")}))  # type: ignore[misc]

    def user_change_password(self, request: HttpRequest, id: str, form_url: str = "") -> HttpResponse:
        """The password form saves the user itself, past save_model: recorded here (never the hash)."""
        with transaction.atomic():
            user = self.get_object(request, unquote(id))
            before = user.password if user is not None else ""
            response = super().user_change_password(request, id, form_url)
            if user is not None:
                user.refresh_from_db(fields=["password"])
                if user.password != before:
                    record_event(
                        actor=request.user,
                        action="user.password_set",
                        obj=user,
                        after={"password_changed": True},
                    )
        return response
