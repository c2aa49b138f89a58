from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from gpuplatform.accounts.models import User


@admin.register(User)
class PlatformUserAdmin(UserAdmin[User]):
    list_display = ("username", "email", "platform_role", "is_service_account", "is_active")
    list_filter = ("platform_role", "is_service_account", "is_active")
    fieldsets = (*UserAdmin.fieldsets, ("Platform", {"fields": ("platform_role", "is_service_account")}))  # type: ignore[misc]
