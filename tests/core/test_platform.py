"""Health, the OpenAPI schema, deploy checks and the scoping door's guard."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from rest_framework import mixins, serializers
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from gpuplatform.api.viewsets import ScopedViewSet
from gpuplatform.health.checks import CHECKS
from tenants.models import TenantNamespace

REPO = Path(__file__).resolve().parents[2]


def process_env(**extra: str) -> dict[str, str]:
    """This environment for a child manage.py, without what the browser tests set for themselves."""
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    return {**env, **extra}


def test_healthz_answers_without_a_database():
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_readyz_checks_database_and_redis():
    body = Client().get("/readyz").json()
    assert body["status"] == "ok"
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["database"]["detail"] == "postgresql reachable"
    assert body["checks"]["redis"] == {**body["checks"]["redis"], "ok": True, "detail": "reachable"}


@pytest.mark.django_db
def test_readyz_reports_an_unreachable_redis(settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    response = Client().get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["redis"]["ok"] is False
    assert "ConnectionError" in body["checks"]["redis"]["detail"]
    assert set(body["checks"]) == set(CHECKS)


@pytest.mark.django_db
def test_openapi_schema_lists_every_endpoint_and_docs_are_served_locally():
    client = Client()
    schema = client.get("/api/schema/?format=json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    for expected in (
        "/api/v1/tenants/",
        "/api/v1/tenants/{id}/",
        "/api/v1/memberships/",
        "/api/v1/tokens/",
        "/api/v1/me/",
        "/api/v1/audit-events/",
    ):
        assert expected in paths, expected
    assert schema.json()["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    docs = client.get("/api/docs/").content.decode()
    assert "cdn" not in docs.lower() and "jsdelivr" not in docs.lower()
    assert "/static/drf_spectacular_sidecar/" in docs


def test_schema_generation_has_no_warnings():
    result = subprocess.run(
        [sys.executable, "manage.py", "spectacular", "--validate", "--fail-on-warn", "--file", os.devnull],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def _signing_key_pem() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return (
        Ed25519PrivateKey.generate()
        .private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        .decode()
    )


PRODUCTION = {
    "GPUPLATFORM_SECURE": "1",
    "SECRET_KEY": "x7!" + "k" * 60 + "Q2#zv",
    "ALLOWED_HOSTS": "gpu.example.com",
}


def test_check_deploy_is_clean_with_production_settings():
    env = process_env(**PRODUCTION, POLICY_SIGNING_KEY=_signing_key_pem())
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_secure_mode_refuses_to_start_without_a_bundle_signing_key():
    env = {k: v for k, v in process_env(**PRODUCTION).items() if k != "POLICY_SIGNING_KEY"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0
    assert "POLICY_SIGNING_KEY" in result.stderr


def test_secure_mode_refuses_to_start_without_a_secret_key():
    env = {k: v for k, v in process_env(GPUPLATFORM_SECURE="1").items() if k != "SECRET_KEY"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_secrets_can_come_from_files(tmp_path):
    key_file = tmp_path / "key"
    key_file.write_text("from-a-file-" + "z" * 50 + "\n")
    code = "from django.conf import settings; print(settings.SECRET_KEY)"
    env = process_env(SECRET_KEY_FILE=str(key_file), DJANGO_SETTINGS_MODULE="gpuplatform.settings")
    result = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.stdout.strip() == "from-a-file-" + "z" * 50, result.stderr


class _NamespaceSerializer(serializers.ModelSerializer):
    class Meta:
        model = TenantNamespace
        fields = ["namespace"]


class _UnscopedViewSet(mixins.ListModelMixin, ScopedViewSet):
    queryset = TenantNamespace.objects.all()  # a plain manager: no visible_to()
    serializer_class = _NamespaceSerializer


@pytest.mark.django_db
def test_the_scoping_door_refuses_a_queryset_without_visible_to(cast):
    request = Request(APIRequestFactory().get("/x"))
    request.user = cast.pat
    view = _UnscopedViewSet()
    view.request = request
    with pytest.raises(ImproperlyConfigured, match="must be tenant-scoped"):
        view.get_queryset()
