"""The OpenID Connect login backend: mozilla-django-oidc's code flow (with PKCE and nonce), stricter
ID-token checks, identities linked by (issuer, subject), and the group mapping applied at each login."""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any
from urllib.parse import urlsplit

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.db import IntegrityError, transaction
from django.http import HttpRequest
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings

from gpuplatform.accounts.models import User
from gpuplatform.api.addresses import client_address
from gpuplatform.audit.services import record_attempt
from gpuplatform.outbound.configured import user_url_session
from tenants.models import SsoIdentity
from tenants.sso import discovery
from tenants.sso.mapping import groups_of, parse_mapping, resolve
from tenants.sso.services import apply_sso_grants

log = logging.getLogger(__name__)
# Clock skew tolerated between the provider and us when checking exp, iat and nbf.
LEEWAY_SECONDS = 30


class GroupMappingBackend(OIDCAuthenticationBackend):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Django builds a backend for every authenticate() and every session's user lookup: nothing
        # here may reach the provider (the library's own __init__ reads every endpoint).
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None
        self.UserModel = get_user_model()

    @staticmethod
    def get_settings(attr: str, *args: Any) -> Any:
        if attr in discovery.ENDPOINTS:
            return discovery.endpoint(attr)
        return import_from_settings(attr, *args)

    @property
    def OIDC_OP_TOKEN_ENDPOINT(self) -> str:
        return discovery.endpoint("OIDC_OP_TOKEN_ENDPOINT")

    @property
    def OIDC_OP_USER_ENDPOINT(self) -> str:
        return discovery.endpoint("OIDC_OP_USER_ENDPOINT")

    @property
    def OIDC_OP_JWKS_ENDPOINT(self) -> str:
        return discovery.endpoint("OIDC_OP_JWKS_ENDPOINT")

    # ----------------------------------------------------------------------------- the ID token

    def _verify_jws(self, payload: str, key: Any) -> dict[str, Any]:
        """Signature, algorithm, issuer, audience, expiry: the library checks only the first two."""
        header = jwt.get_unverified_header(payload)
        if header.get("alg") != self.OIDC_RP_SIGN_ALGO:
            raise SuspiciousOperation(
                f"ID token signed with {header.get('alg')!r}, not {self.OIDC_RP_SIGN_ALGO}"
            )
        try:
            claims: dict[str, Any] = jwt.decode(
                payload,
                key,
                algorithms=[self.OIDC_RP_SIGN_ALGO],
                audience=self.OIDC_RP_CLIENT_ID,
                issuer=settings.OIDC_ISSUER,
                leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "iat", "iss", "aud", "sub"]},
            )
        except jwt.InvalidTokenError as exc:
            raise SuspiciousOperation(f"ID token refused: {exc}") from exc
        # With several audiences, azp must name us (OpenID Connect Core §3.1.3.7, step 5).
        several = isinstance(claims.get("aud"), list) and len(claims["aud"]) > 1
        if several and claims.get("azp") != self.OIDC_RP_CLIENT_ID:
            raise SuspiciousOperation("ID token for several audiences without azp naming this client")
        return claims

    # ----------------------------------------------------------------------------- the provider's endpoints
    # The library calls requests.get/post itself, with no way to hand it a session: the three calls are
    # made here instead, through the outbound policy (checked at connect time, no redirects), and a
    # failure says the status, never the body (the library puts the token endpoint's body in its error).

    def _fetch(self, method: str, url: str, **kwargs: Any) -> requests.Response:
        with user_url_session() as session:
            response = session.request(
                method, url, timeout=settings.OIDC_TIMEOUT, verify=settings.OIDC_VERIFY_SSL, **kwargs
            )
        if response.status_code != 200:
            what = "redirected (not followed)" if response.is_redirect else f"answered {response.status_code}"
            raise requests.HTTPError(f"the provider's {urlsplit(url).path or '/'} {what}", response=response)
        return response

    def retrieve_matching_jwk(self, token: str) -> Any:
        """The provider's key for this token: same kid and, when the key names one, same algorithm."""
        jwks = self._fetch("GET", self.OIDC_OP_JWKS_ENDPOINT).json()
        header = jwt.get_unverified_header(token)
        matching = [
            jwk
            for jwk in jwks.get("keys", [])
            if jwk.get("kid") == header.get("kid") and jwk.get("alg", header.get("alg")) == header.get("alg")
        ]
        if not matching:
            raise SuspiciousOperation("Could not find a valid JWKS.")
        return jwt.PyJWK(matching[-1])

    def get_token(self, payload: dict[str, Any]) -> dict[str, Any]:
        token: dict[str, Any] = self._fetch("POST", self.OIDC_OP_TOKEN_ENDPOINT, data=payload).json()
        return token

    def get_userinfo(self, access_token: str, id_token: str, payload: dict[str, Any]) -> dict[str, Any]:
        """The ID token's claims, completed by the userinfo endpoint's, which must be about the same
        subject (OpenID Connect Core §5.3.2): else a token mix-up could log in someone else."""
        answer = self._fetch(
            "GET", self.OIDC_OP_USER_ENDPOINT, headers={"Authorization": f"Bearer {access_token}"}
        )
        if answer.headers.get("content-type", "").lower().startswith("application/jwt"):
            userinfo: dict[str, Any] = self.verify_token(answer.text)
        else:
            userinfo = answer.json()
        if userinfo.get("sub") != payload.get("sub"):
            raise SuspiciousOperation("userinfo is about another subject than the ID token")
        return {**payload, **userinfo}

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        return bool(claims.get("sub"))

    # ----------------------------------------------------------------------------- the account

    def filter_users_by_claims(self, claims: dict[str, Any]) -> Any:
        return self.UserModel.objects.filter(
            sso_identity__issuer=settings.OIDC_ISSUER, sso_identity__subject=str(claims["sub"])
        )

    def create_user(self, claims: dict[str, Any]) -> User:
        with transaction.atomic():
            user = User(username=self._free_username(claims), is_active=True)
            self._copy_profile(user, claims)
            user.set_unusable_password()  # signs in through the provider only
            user.save()
            try:
                with transaction.atomic():
                    SsoIdentity.objects.create(
                        user=user, issuer=settings.OIDC_ISSUER, subject=str(claims["sub"])
                    )
            except IntegrityError as exc:  # the same person's first login, twice at once
                raise SuspiciousOperation("this identity was linked meanwhile; log in again") from exc
        return self._apply_groups(user, claims)

    def update_user(self, user: User, claims: dict[str, Any]) -> User:
        fields = self._copy_profile(user, claims)
        if fields:
            user.save(update_fields=fields)
        return self._apply_groups(user, claims)

    def _apply_groups(self, user: User, claims: dict[str, Any]) -> User:
        if user.is_service_account:
            raise SuspiciousOperation("a service account cannot log in to the UI")
        groups = groups_of(claims, settings.OIDC_GROUPS_CLAIM)
        desired = resolve(groups, parse_mapping(settings.OIDC_GROUP_ROLES))
        changes = apply_sso_grants(
            user_id=user.pk, identity=user.sso_identity, groups=groups, desired=desired
        )
        if changes.unknown_tenants:
            log.warning("single sign-on: the group mapping names unknown tenants %s", changes.unknown_tenants)
        user.refresh_from_db()
        return user

    @staticmethod
    def _copy_profile(user: User, claims: dict[str, Any]) -> list[str]:
        wanted = {
            "email": str(claims.get("email") or "")[:254],
            "first_name": str(claims.get("given_name") or "")[:150],
            "last_name": str(claims.get("family_name") or "")[:150],
        }
        changed = [name for name, value in wanted.items() if getattr(user, name) != value]
        for name in changed:
            setattr(user, name, wanted[name])
        return changed

    def _free_username(self, claims: dict[str, Any]) -> str:
        """The provider's preferred name when no account has it; else suffixed by the subject's hash,
        so an SSO login never lands in a local account that happens to share a name."""
        base = str(claims.get("preferred_username") or claims.get("email") or claims["sub"])[:120]
        if not self.UserModel.objects.filter(username=base).exists():
            return base
        digest = hashlib.sha256(f"{settings.OIDC_ISSUER}|{claims['sub']}".encode()).hexdigest()[:8]
        return f"{base}-{digest}"

    def get_user(self, user_id: int) -> User | None:
        """The session's user, while active: the library's own lookup ignores is_active, so a
        deactivated person's open sessions would go on working."""
        user: User | None = self.UserModel.objects.filter(pk=user_id, is_active=True).first()
        return user

    # ----------------------------------------------------------------------------- the login

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> User | None:
        if request is None or not settings.OIDC_ENABLED or "code" not in request.GET:
            return None
        try:
            user: User | None = super().authenticate(request, **kwargs)
        except (SuspiciousOperation, requests.RequestException, json.JSONDecodeError, KeyError) as exc:
            # Refused: recorded, and the login page says single sign-on failed (never why, to the
            # browser: the reason is for the audit log).
            record_attempt(
                actor=None,
                action="auth.login_failed",
                object_type="accounts.user",
                object_repr="single sign-on",
                detail={"method": "oidc", "reason": str(exc)[:300], "address": client_address(request)},
            )
            log.warning("single sign-on refused: %s", exc)
            return None
        return user
