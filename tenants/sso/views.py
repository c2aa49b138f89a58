"""Thin adapters: the login page (password form and/or the single sign-on button) and the library's
two OpenID Connect views, answering 404 while single sign-on is off."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.http import Http404, HttpRequest, HttpResponse
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from gpuplatform.accounts.forms import LoginForm
from tenants.sso import discovery


class LoginView(auth_views.LoginView):
    authentication_form = LoginForm
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {
            **super().get_context_data(**kwargs),
            "sso_enabled": settings.OIDC_ENABLED,
            "sso_name": settings.OIDC_PROVIDER_NAME,
            "local_login": settings.LOCAL_LOGIN_ENABLED,
            "sso_failed": self.request.GET.get("sso") == "failed",
        }

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not settings.LOCAL_LOGIN_ENABLED:
            # Password logins are off: refused before any password is looked at.
            return self.render_to_response(self.get_context_data(), status=403)
        return super().post(request, *args, **kwargs)


class _SsoOnly:
    @staticmethod
    def get_settings(attr: str, *args: Any) -> Any:
        if attr in discovery.ENDPOINTS:
            return discovery.endpoint(attr)
        return import_from_settings(attr, *args)

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not settings.OIDC_ENABLED:
            raise Http404("single sign-on is not configured")
        return super().dispatch(request, *args, **kwargs)  # type: ignore[misc]


class Authenticate(_SsoOnly, OIDCAuthenticationRequestView):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The library reads the provider's endpoint here; ours is found at the request (discovery).
        super(OIDCAuthenticationRequestView, self).__init__(*args, **kwargs)
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID

    def get(self, request: HttpRequest) -> HttpResponse:
        self.OIDC_OP_AUTH_ENDPOINT = discovery.endpoint("OIDC_OP_AUTHORIZATION_ENDPOINT")
        return super().get(request)


class Callback(_SsoOnly, OIDCAuthenticationCallbackView):
    pass
