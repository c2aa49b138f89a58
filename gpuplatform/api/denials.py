"""Audit events for refused API calls: a 403 to a known user, and a rejected bearer token (with its
key id, never the secret). Unauthenticated calls with no credentials are not recorded one by one:
the address guard counts and slows them."""

from __future__ import annotations

from rest_framework.request import Request

from gpuplatform.api.addresses import client_address
from gpuplatform.audit.services import record_attempt


def _presented_key_id(request: Request) -> str:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    _, _, credentials = header.partition(" ")
    parts = credentials.strip().split("_", 2)
    return parts[1][:32] if len(parts) == 3 and parts[0] == "gpp" else ""


def record_denial(request: Request, *, status_code: int, code: str) -> None:
    if request.method == "OPTIONS":
        return
    detail = {"method": request.method, "path": request.path[:300], "code": code}
    detail["address"] = client_address(request._request)
    if status_code == 403 and request.user and request.user.is_authenticated:
        token = request.auth
        detail["key_id"] = getattr(token, "key_id", "")
        record_attempt(actor=request.user, action="access.denied", object_type="api", detail=detail)
    elif status_code == 401:
        key_id = _presented_key_id(request)
        if key_id:
            detail["key_id"] = key_id
            record_attempt(
                actor=None,
                action="api_token.rejected",
                object_type="accounts.apitoken",
                object_repr=key_id,
                detail=detail,
            )
