"""The caller's address, as every limit and audit event of the API names it."""

from __future__ import annotations

from django.http import HttpRequest
from rest_framework.throttling import BaseThrottle


def client_address(request: HttpRequest) -> str:
    """REMOTE_ADDR, or X-Forwarded-For past ``NUM_PROXIES`` trusted proxies (as DRF's throttles)."""
    return str(BaseThrottle().get_ident(request))  # type: ignore[arg-type]
