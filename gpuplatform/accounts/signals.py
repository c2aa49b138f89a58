"""Audit events for logins, succeeded and failed (django-axes also counts the failures)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.dispatch import receiver
from django.http import HttpRequest

from gpuplatform.api.addresses import client_address
from gpuplatform.audit.services import record_attempt


@receiver(user_logged_in, dispatch_uid="audit-login")
def audit_login(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    address = client_address(request) if request is not None else ""
    record_attempt(
        actor=user,
        action="auth.login",
        object_type="accounts.user",
        object_id=str(user.pk),
        object_repr=user.username,
        detail={"address": address},
    )


@receiver(user_login_failed, dispatch_uid="audit-login-failed")
def audit_login_failed(
    sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None, **kwargs: Any
) -> None:
    username = str(credentials.get("username", ""))[:150]
    address = client_address(request) if request is not None else ""
    record_attempt(
        actor=None,
        action="auth.login_failed",
        object_type="accounts.user",
        object_repr=username,
        detail={"username": username, "address": address},
    )
