"""System checks for single sign-on, so `manage.py check --deploy` (and every start) refuses a
configuration that would fail at the first login."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.checks import Error, Tags, register

from gpuplatform.outbound.configured import user_url_policy
from gpuplatform.outbound.policy import OutboundRefused, vet_url
from tenants.sso.mapping import MappingError, parse_mapping

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
# The endpoints the server itself calls; the authorization and logout endpoints are the browser's.
SERVER_FETCHED_SETTINGS = ("OIDC_OP_TOKEN_ENDPOINT", "OIDC_OP_USER_ENDPOINT", "OIDC_OP_JWKS_ENDPOINT")


@register()
def check_single_sign_on(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    errors: list[Error] = []
    if not settings.OIDC_ENABLED:
        if not settings.LOCAL_LOGIN_ENABLED:
            errors.append(
                Error("LOCAL_LOGIN_ENABLED=0 without OIDC_ENABLED=1: nobody could log in", id="sso.E001")
            )
        return errors
    issuer = urlsplit(settings.OIDC_ISSUER)
    if issuer.scheme != "https" and not (issuer.scheme == "http" and issuer.hostname in LOOPBACK):
        errors.append(Error(f"OIDC_ISSUER must be an https URL, got {settings.OIDC_ISSUER!r}", id="sso.E002"))
    for name in ("OIDC_RP_CLIENT_ID", "OIDC_RP_CLIENT_SECRET"):
        if not getattr(settings, name):
            errors.append(Error(f"{name} must be set when OIDC_ENABLED=1", id="sso.E003"))
    try:
        parse_mapping(settings.OIDC_GROUP_ROLES)
    except (MappingError, json.JSONDecodeError) as exc:
        errors.append(Error(f"OIDC_GROUP_ROLES: {exc}", id="sso.E004"))
    if "openid" not in settings.OIDC_RP_SCOPES.split():
        errors.append(Error("OIDC_RP_SCOPES must include openid", id="sso.E005"))
    return errors


@register()
def check_single_sign_on_addresses(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """The issuer and any endpoint set explicitly pass the outbound policy (as discovered ones do when
    fetched): a provider on a metadata, link-local or unlisted internal address is refused at start."""
    if not settings.OIDC_ENABLED:
        return []
    errors: list[Error] = []
    policy = user_url_policy()
    for name in ("OIDC_ISSUER", *SERVER_FETCHED_SETTINGS):
        value = getattr(settings, name, "")
        if not value:
            continue
        try:
            vet_url(str(value), policy)
        except OutboundRefused as refused:
            errors.append(Error(f"{name}: {refused.message} (OUTBOUND_ALLOWED_NETWORKS)", id="sso.E006"))
    return errors


@register(Tags.security, deploy=True)
def check_single_sign_on_verifies_tls(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """Deploy only (a test provider with a self-signed certificate is fine on a laptop): with TLS
    verification off, whoever sits between the server and the provider answers the token and user
    info requests, and so signs anyone in as anyone."""
    if settings.OIDC_ENABLED and not settings.OIDC_VERIFY_SSL:
        return [
            Error(
                "OIDC_VERIFY_SSL=0: the identity provider's certificate is not checked",
                hint="Trust the provider's CA instead (REQUESTS_CA_BUNDLE) and set OIDC_VERIFY_SSL=1.",
                id="sso.E007",
            )
        ]
    return []
