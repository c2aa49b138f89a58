"""A per-address rate on failed password logins that only slows: past ``LOGIN_ADDRESS_FAILURE_RATE``
failures in a window, whatever the usernames, that address's password logins answer 429 until the
window ends. Nobody else's: the lockout proper is django-axes's, per username and address pair, so one
client guessing can neither lock a user out elsewhere nor try many usernames quickly."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.signals import user_login_failed
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from gpuplatform.api.address_guard import count_in_window, wait_if_over
from gpuplatform.api.addresses import client_address

SCOPE = "login-address"


@receiver(user_login_failed, dispatch_uid="login-address-rate")
def count_failed_login(
    sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None, **kwargs: Any
) -> None:
    if request is not None:
        count_in_window(scope=SCOPE, ident=client_address(request), rate=settings.LOGIN_ADDRESS_FAILURE_RATE)


class LoginRateMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method == "POST" and request.path in (reverse("login"), reverse("admin:login")):
            retry_after = wait_if_over(
                scope=SCOPE, ident=client_address(request), rate=settings.LOGIN_ADDRESS_FAILURE_RATE
            )
            if retry_after is not None:
                response = render(request, "registration/locked_out.html", status=429)
                response["Retry-After"] = str(retry_after)
                return response
        return self.get_response(request)
