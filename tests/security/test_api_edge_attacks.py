"""Low findings of issue #26 (finding 10, in part): what the API answers at its edges, and keys and
checks outside the happy path. Each test is named for what an attacker (or an unlucky operator) tries."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.django_db


def _is_problem(response, status: int, code: str) -> None:
    assert (response.status_code, response["Content-Type"]) == (status, "application/problem+json"), (
        response.content[:500]
    )
    assert response.json()["code"] == code


# As JSON text. The bare NaN and Infinity literals are not JSON: the parser refuses them.
@pytest.mark.parametrize(
    ("objective", "code"),
    [
        ('"NaN"', "slo.objective_invalid"),
        ('"sNaN"', "slo.objective_invalid"),
        ('"-NaN"', "slo.objective_invalid"),
        ('"Infinity"', "slo.objective_invalid"),
        ("1e999", "slo.objective_invalid"),
        ("NaN", "malformed_request"),
        ("-Infinity", "malformed_request"),
    ],
)
def test_an_slo_objective_of_nan_or_infinity_is_a_problem_not_a_server_error(cast, api, objective, code):
    body = '{"name": "nan", "sli": "queue_wait", "objective": ' + objective + "}"
    got = api(cast.pat).generic("POST", "/api/v1/slos/", body, content_type="application/json")
    _is_problem(got, 400, code)


@pytest.mark.parametrize("size", ["0", "-1", "-500", "ten"])
def test_a_page_size_of_zero_or_less_is_a_problem_not_one_item(cast, api, size):
    got = api(cast.pat).get("/api/v1/tenants/", {"page_size": size})
    _is_problem(got, 400, "invalid_page_size")


def test_a_page_size_over_the_cap_is_capped(cast, api):
    got = api(cast.pat).get("/api/v1/tenants/", {"page_size": "100000"})
    assert got.status_code == 200 and len(got.json()["results"]) == 6


def test_an_oversized_body_under_the_api_answers_problem_json_not_html(cast, api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = b'{"name": "' + b"x" * 2000 + b'", "scopes": ["read"]}'
    got = api(cast.alice).generic("POST", "/api/v1/tokens/", body, content_type="application/json")
    _is_problem(got, 413, "request_too_large")


def test_a_forged_host_header_under_the_api_answers_problem_json_not_html(cast, api):
    got = api(cast.alice).get("/api/v1/tenants/", HTTP_HOST="attacker.example")
    _is_problem(got, 400, "bad_host")


def test_a_forged_host_header_elsewhere_still_answers_html(client):
    got = client.get("/login/", HTTP_HOST="attacker.example")
    assert got.status_code == 400 and got["Content-Type"].startswith("text/html")


def test_api_answers_are_never_stored_by_a_cache_including_a_new_token(cast, api, client):
    created = api(cast.alice).post("/api/v1/tokens/", {"name": "ci", "scopes": ["read"]}, format="json")
    listed = api(cast.alice).get("/api/v1/tenants/")
    refused = client.get("/api/v1/tenants/")  # a problem answer too
    for response in (created, listed, refused):
        assert "no-store" in response["Cache-Control"], response.status_code
    assert created.status_code == 201 and "token" in created.json()


def _run(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    child = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DJANGO_ALLOW_ASYNC_UNSAFE", "SECRET_KEY", "SECRET_KEY_FILE"}
    }
    return subprocess.run(
        [sys.executable, *args],
        cwd=REPO,
        env={**child, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_secure_mode_with_tls_verification_to_the_identity_provider_off_fails_check_deploy():
    from tests.core.test_platform import PRODUCTION, _signing_key_pem

    oidc = {
        "OIDC_ENABLED": "1",
        "OIDC_ISSUER": "https://idp.example.com",
        "OIDC_RP_CLIENT_ID": "gpuplatform",
        "OIDC_CLIENT_SECRET": "s3cret-" + "x" * 30,
    }
    args = ["manage.py", "check", "--deploy", "--fail-level", "WARNING"]
    signing = _signing_key_pem()
    verified = _run(args, **PRODUCTION, **oidc, POLICY_SIGNING_KEY=signing)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    unverified = _run(args, **PRODUCTION, **oidc, POLICY_SIGNING_KEY=signing, OIDC_VERIFY_SSL="0")
    assert unverified.returncode != 0
    assert "sso.E007" in unverified.stdout + unverified.stderr


def test_outside_secure_mode_the_keys_are_not_a_public_default(tmp_path):
    """Without SECRET_KEY the demo and tests make their own random key, once, in a file only its owner
    reads: nothing published in the repository decrypts a kubeconfig or signs a bundle."""
    code = "import django; django.setup(); from django.conf import settings; print(settings.SECRET_KEY)"
    key_file = tmp_path / "var" / "secret_key"
    first = _run(
        ["-c", code], DEV_SECRET_KEY_FILE=str(key_file), DJANGO_SETTINGS_MODULE="gpuplatform.settings"
    )
    again = _run(
        ["-c", code], DEV_SECRET_KEY_FILE=str(key_file), DJANGO_SETTINGS_MODULE="gpuplatform.settings"
    )
    assert first.returncode == 0, first.stderr
    key = first.stdout.strip()
    assert key == again.stdout.strip() == key_file.read_text().strip()  # made once, then reused
    assert len(key) >= 50 and "insecure" not in key and "demo" not in key
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert settings.SECRET_KEY != "django-insecure-demo-key-0123456789abcdefghijklmnopqrstuvwxyz"
