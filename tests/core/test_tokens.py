"""API tokens: shown once, stored as a hash, scoped, expiring, revocable."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient
from rest_framework.throttling import SimpleRateThrottle

from gpuplatform.accounts.models import ApiToken
from gpuplatform.accounts.tokens import authenticate_token, issue_api_token
from tests.fixtures.people import make_user
from tests.helpers import assert_problem, database_state

pytestmark = pytest.mark.django_db

TABLES = ("tenants.Tenant", "accounts.ApiToken", "audit.AuditEvent")


def bearer(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def test_a_created_token_is_shown_once_and_stored_hashed(cast, api):
    response = api(cast.alice).post("/api/v1/tokens/", {"name": "ci", "scopes": ["read"]}, format="json")
    assert response.status_code == 201
    plaintext = response.json()["token"]
    stored = ApiToken.objects.get(pk=response.json()["id"])
    secret = plaintext.split("_", 2)[2]
    assert stored.secret_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in str(ApiToken.objects.filter(pk=stored.pk).values().get())
    detail = api(cast.alice).get(f"/api/v1/tokens/{stored.pk}/").json()
    assert "token" not in detail
    assert detail["scopes"] == ["read"]
    me = bearer(plaintext).get("/api/v1/me/").json()
    assert me["username"] == "alice"
    assert me["token"]["name"] == "ci"


def test_last_used_is_recorded(cast):
    issued = issue_api_token(actor=cast.alice, name="probe", scopes=["read"])
    assert issued.token.last_used_at is None
    bearer(issued.plaintext).get("/api/v1/me/")
    issued.token.refresh_from_db()
    assert issued.token.last_used_at is not None


def test_a_read_token_cannot_write_and_nothing_changes(cast):
    issued = issue_api_token(actor=cast.pat, name="reader", scopes=["read"])
    before = database_state(*TABLES)
    response = bearer(issued.plaintext).post(
        "/api/v1/tenants/", {"slug": "x", "display_name": "X"}, format="json"
    )
    assert_problem(response, 403, "insufficient_scope")
    assert database_state(*TABLES) == before
    assert bearer(issued.plaintext).get("/api/v1/tenants/").status_code == 200


def test_expired_revoked_and_garbage_tokens_are_401(cast, api):
    expiring = issue_api_token(
        actor=cast.alice, name="short", scopes=["read"], expires_at=timezone.now() + timedelta(seconds=30)
    )
    ApiToken.objects.filter(pk=expiring.token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    revoked = issue_api_token(actor=cast.alice, name="old", scopes=["read"])
    assert api(cast.alice).delete(f"/api/v1/tokens/{revoked.token.pk}/").status_code == 204
    before = database_state(*TABLES)
    cases = {
        expiring.plaintext: "token_expired",
        revoked.plaintext: "token_revoked",
        "gpp_000000000000_nope": "token_invalid",
        "not-a-token": "token_malformed",
    }
    for token, code in cases.items():
        response = bearer(token).post("/api/v1/tenants/", {"slug": "x", "display_name": "X"}, format="json")
        body = assert_problem(response, 401, code)
        assert response["WWW-Authenticate"].startswith("Bearer")
        assert body["type"].endswith(code)
    assert database_state(*TABLES) == before


def test_nobody_issues_tokens_for_someone_else(cast, api):
    before = database_state(*TABLES)
    response = api(cast.alice).post(
        "/api/v1/tokens/", {"name": "x", "scopes": ["read"], "user": "bob"}, format="json"
    )
    assert_problem(response, 403, "permission_denied")
    response = api(cast.pat).post(
        "/api/v1/tokens/", {"name": "x", "scopes": ["read"], "user": "bob"}, format="json"
    )
    assert_problem(response, 403, "permission_denied")
    assert database_state(*TABLES) == before


def test_platform_admin_issues_a_token_for_a_service_account(cast, api):
    make_user("ci-bot", is_service_account=True)
    response = api(cast.pat).post(
        "/api/v1/tokens/", {"name": "deploy", "scopes": ["read", "write"], "user": "ci-bot"}, format="json"
    )
    assert response.status_code == 201, response.json()
    assert bearer(response.json()["token"]).get("/api/v1/me/").json()["username"] == "ci-bot"
    listed = {row["user"] for row in api(cast.pat).get("/api/v1/tokens/").json()["results"]}
    assert "ci-bot" in listed


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ({"name": "x", "scopes": ["admin"]}, "validation_failed"),
        ({"name": "x", "scopes": []}, "validation_failed"),
        ({"name": "x" * 101, "scopes": ["read"]}, "validation_failed"),
        ({"name": "x", "scopes": ["read"], "expires_at": "2001-01-01T00:00:00Z"}, "validation_failed"),
        ({"name": "x", "scopes": ["read"], "secret": "mine"}, "unknown_field"),
    ],
)
def test_bad_token_requests_change_nothing(cast, api, payload, code):
    client = api(cast.alice)
    before = database_state(*TABLES)
    assert_problem(client.post("/api/v1/tokens/", payload, format="json"), 400, code)
    assert database_state(*TABLES) == before


def test_a_live_token_name_is_unique_per_user(cast, api):
    client = api(cast.alice)
    assert (
        client.post("/api/v1/tokens/", {"name": "dup", "scopes": ["read"]}, format="json").status_code == 201
    )
    assert_problem(
        client.post("/api/v1/tokens/", {"name": "dup", "scopes": ["read"]}, format="json"),
        409,
        "token_name_taken",
    )


def test_throttling_per_token(cast, monkeypatch):
    # DRF copies the configured rates onto the class at import; lower them for this test only.
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"token": "3/minute", "user": "1000/minute"})
    one = bearer(issue_api_token(actor=cast.alice, name="t1", scopes=["read"]).plaintext)
    other = bearer(issue_api_token(actor=cast.alice, name="t2", scopes=["read"]).plaintext)
    assert [one.get("/api/v1/me/").status_code for _ in range(3)] == [200, 200, 200]
    response = one.get("/api/v1/me/")
    assert_problem(response, 429, "rate_limited")
    assert int(response["Retry-After"]) > 0
    assert other.get("/api/v1/me/").status_code == 200


def test_the_token_limit_is_a_sliding_window_counting_only_what_passed(cast, monkeypatch):
    # DRF's clock (time.time) set by hand: the window slides with each request, a refused request does
    # not count, and Retry-After is the time until the oldest counted request leaves the window.
    clock = [1_000_000.0]
    monkeypatch.setattr(SimpleRateThrottle, "timer", staticmethod(lambda: clock[0]))
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"token": "2/minute", "user": "1000/minute"})
    one = bearer(issue_api_token(actor=cast.alice, name="t1", scopes=["read"]).plaintext)

    def at(seconds: float) -> tuple[int, str | None]:
        clock[0] = 1_000_000.0 + seconds
        response = one.get("/api/v1/me/")
        return response.status_code, response.headers.get("Retry-After")

    assert at(0) == (200, None)
    assert at(20) == (200, None)
    assert at(35) == (429, "25")  # the one at 0 leaves at 60
    assert at(59.5) == (429, "1")
    assert at(60) == (200, None)  # at 60 the one at 0 has left: 20 and 60 now count
    assert at(70) == (429, "10")  # the refused ones at 35 and 59.5 never counted
    assert at(80.5) == (200, None)


def test_the_token_read_per_request_equals_the_orm_read_field_for_field(cast):
    # Each request reads its token and user by one constant SQL text (accounts/tokens.py); it must give
    # what the ORM's select_related read gives, for every column, converted alike (scopes as a list).
    issued = issue_api_token(actor=cast.alice, name="ci", scopes=["read", "write"])
    token = authenticate_token(issued.plaintext)
    expected = ApiToken.objects.select_related("user").get(pk=issued.token.pk)

    def columns(row):
        return {f.attname: getattr(row, f.attname) for f in type(row)._meta.concrete_fields}

    assert columns(token) == columns(expected) and token.scopes == ["read", "write"]
    assert columns(token.user) == columns(expected.user) and token.user.username == "alice"
    assert not token._state.adding and token._state.db == expected._state.db
