"""ID tokens are checked against the real provider's published keys: one it signed for us now passes;
expired, for another client, from another issuer, signed by another key under its key id, or with a
replayed nonce, each is refused, and a refused login is in the audit log."""

from __future__ import annotations

import time

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from django.contrib.sessions.backends.db import SessionStore
from django.core.exceptions import SuspiciousOperation
from django.test import RequestFactory

from gpuplatform.audit.models import AuditEvent
from tenants.sso.backend import GroupMappingBackend
from tests.fixtures.oidc import CLIENT_ID

pytestmark = pytest.mark.django_db

NONCE = "n-0S6_WzA2Mj"


def claims(sso, **override):
    now = int(time.time())
    return {
        "iss": sso.issuer,
        "aud": CLIENT_ID,
        "sub": "0f3c-dana",
        "iat": now,
        "exp": now + 300,
        "nonce": NONCE,
        **override,
    }


def test_a_token_signed_by_the_provider_for_us_is_accepted(sso):
    payload = GroupMappingBackend().verify_token(sso.mint(**claims(sso)), nonce=NONCE)
    assert payload["sub"] == "0f3c-dana"


@pytest.mark.parametrize(
    ("why", "override", "refusal"),
    [
        ("expired ten minutes ago", {"exp": int(time.time()) - 600}, "expired"),
        ("for another client", {"aud": "someone-else"}, "(?i)audience"),
        ("from another issuer", {"iss": "https://evil.example"}, "(?i)issuer"),
        ("without an expiry", {"exp": None}, "exp"),
        ("with another login's nonce", {"nonce": "replayed"}, "Nonce"),
        ("for us and others without azp", {"aud": [CLIENT_ID, "other"]}, "azp"),
    ],
)
def test_a_bad_token_is_refused(sso, why, override, refusal):
    body = {k: v for k, v in claims(sso, **override).items() if v is not None}
    with pytest.raises(SuspiciousOperation, match=refusal):
        GroupMappingBackend().verify_token(sso.mint(**body), nonce=NONCE)


def test_a_token_signed_by_another_key_under_the_providers_key_id_is_refused(sso):
    forger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with pytest.raises(SuspiciousOperation, match=r"verification failed|refused"):
        GroupMappingBackend().verify_token(sso.mint(key=forger, **claims(sso)), nonce=NONCE)


def test_an_unsigned_token_is_refused(sso):
    import jwt

    unsigned = jwt.encode(claims(sso), key="", algorithm="none", headers={"kid": "test-signing-key"})
    with pytest.raises(SuspiciousOperation):
        GroupMappingBackend().verify_token(unsigned, nonce=NONCE)


def test_a_code_the_provider_never_issued_is_refused_and_audited(sso):
    # the provider's token endpoint answers invalid_grant; no user is made, the refusal is recorded
    request = RequestFactory().get("/oidc/callback/", {"code": "made-up", "state": "s"})
    request.session = SessionStore()
    assert GroupMappingBackend().authenticate(request, nonce=NONCE, code_verifier="v" * 64) is None
    refused = AuditEvent.objects.get(action="auth.login_failed")
    assert refused.after["method"] == "oidc" and "400" in refused.after["reason"]
