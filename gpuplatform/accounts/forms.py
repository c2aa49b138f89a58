"""The login form: people log in to the UI; service accounts work through API tokens only."""

from __future__ import annotations

from django import forms
from django.contrib.auth.forms import AuthenticationForm

from gpuplatform.accounts.models import User


class LoginForm(AuthenticationForm):
    def confirm_login_allowed(self, user: User) -> None:
        super().confirm_login_allowed(user)
        if user.is_service_account:
            raise forms.ValidationError(
                "Service accounts cannot log in to the web UI; they use API tokens.", code="service_account"
            )
