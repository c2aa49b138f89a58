"""The provider's endpoints from its discovery document (OpenID Connect Discovery 1.0), fetched on
first use and kept for an hour; endpoints set explicitly in settings win. Nothing is fetched at
start-up, so a provider that is down delays logins, not the service. The document is fetched under the
outbound policy (no redirects), and the endpoints it names for the server to call must pass it."""

from __future__ import annotations

import threading
import time
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from gpuplatform.outbound.configured import user_url_policy, user_url_session
from gpuplatform.outbound.policy import OutboundRefused, vet_url

# Setting name -> discovery document field.
ENDPOINTS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
    "OIDC_OP_LOGOUT_ENDPOINT": "end_session_endpoint",
}
# The endpoints the server itself calls (the others are the browser's).
SERVER_FETCHED = ("token_endpoint", "userinfo_endpoint", "jwks_uri")
KEEP_SECONDS = 3600

_lock = threading.Lock()
_cached: dict[str, tuple[float, dict[str, Any]]] = {}


def document(issuer: str) -> dict[str, Any]:
    with _lock:
        hit = _cached.get(issuer)
        if hit is not None and time.monotonic() - hit[0] < KEEP_SECONDS:
            return hit[1]
    with user_url_session() as session:
        response = session.get(
            f"{issuer.rstrip('/')}/.well-known/openid-configuration",
            timeout=settings.OIDC_TIMEOUT,
            verify=settings.OIDC_VERIFY_SSL,
        )
    if response.is_redirect:
        raise ImproperlyConfigured(f"the discovery document of {issuer} redirects elsewhere: not followed")
    response.raise_for_status()
    found: dict[str, Any] = response.json()
    # The document must be the issuer's own (Discovery §4.3): else tokens would be checked against
    # another issuer's keys.
    if found.get("issuer", "").rstrip("/") != issuer.rstrip("/"):
        raise ImproperlyConfigured(f"the discovery document of {issuer} names issuer {found.get('issuer')!r}")
    # The endpoints this server fetches pass the outbound policy now (and again on each connection):
    # a provider's document must not point the server at an internal address.
    for field in SERVER_FETCHED:
        if found.get(field):
            try:
                vet_url(str(found[field]), user_url_policy())
            except OutboundRefused as refused:
                raise ImproperlyConfigured(
                    f"the discovery document of {issuer} names a refused {field}: {refused.message}"
                ) from None
    with _lock:
        _cached[issuer] = (time.monotonic(), found)
    return found


def endpoint(name: str) -> str:
    explicit = getattr(settings, name, "")
    if explicit:
        return str(explicit)
    value = document(settings.OIDC_ISSUER).get(ENDPOINTS[name], "")
    if not value and name != "OIDC_OP_LOGOUT_ENDPOINT":
        raise ImproperlyConfigured(f"{settings.OIDC_ISSUER} publishes no {ENDPOINTS[name]}")
    return str(value)


def forget() -> None:
    with _lock:
        _cached.clear()
