"""Bearer tokens for REST clients, sessions (with CSRF) for the browser."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from gpuplatform.accounts.models import ApiToken, User
from gpuplatform.accounts.tokens import TokenInvalid, authenticate_token


class TokenAuthenticationFailed(exceptions.AuthenticationFailed):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.problem_code = code


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[User, ApiToken] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        keyword, _, credentials = header.partition(" ")
        if keyword.lower() != self.keyword.lower():
            return None
        credentials = credentials.strip()
        if not credentials or " " in credentials:
            raise TokenAuthenticationFailed(
                "token_malformed", "Authorization header must be 'Bearer <token>'."
            )
        try:
            token = authenticate_token(credentials)
        except TokenInvalid as exc:
            raise TokenAuthenticationFailed(exc.code, exc.message) from exc
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="gpuplatform"'


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "gpuplatform.api.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "bearerFormat": "gpp_<key id>_<secret>"}
