"""Rate limits per API token (per user for sessions, per address for anonymous callers), and per user
across all of that user's tokens and sessions."""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from gpuplatform.accounts.models import ApiToken
from gpuplatform.api.addresses import client_address


class TokenRateThrottle(SimpleRateThrottle):
    scope = "token"

    def get_ident(self, request: Request) -> str:
        # DRF's own reading believes any X-Forwarded-For when NUM_PROXIES is unset.
        return client_address(request)

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if isinstance(request.auth, ApiToken):
            ident = f"token:{request.auth.pk}"
        elif request.user and request.user.is_authenticated:
            ident = f"user:{request.user.pk}"
        else:
            ident = f"addr:{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}


class UserRateThrottle(SimpleRateThrottle):
    scope = "user"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if request.user and request.user.is_authenticated:
            return self.cache_format % {"scope": self.scope, "ident": f"user:{request.user.pk}"}
        return None  # anonymous callers are limited per address (TokenRateThrottle, AddressGuardMiddleware)
