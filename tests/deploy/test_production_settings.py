"""Production settings as the chart sets them: `manage.py check --deploy` is clean for the defaults
and for the single sign-on example, and every kind of page carries the security headers."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from tests.deploy.chart import EXAMPLES, REPO, named, render, values_of
from tests.deploy.environment import container_env, made_secrets


@pytest.mark.parametrize("values_file", [None, *EXAMPLES], ids=["defaults", *(p.stem for p in EXAMPLES)])
@pytest.mark.parametrize("component", ["web", "worker"])
def test_check_deploy_is_clean_with_the_charts_environment(values_file, component):
    objects = render(values_of(values_file))
    deployment = named(objects, "Deployment", f"gpuplatform-{component}")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    env = container_env(objects, container, made_secrets(os.environ["DATABASE_URL"], os.environ["REDIS_URL"]))
    assert env["GPUPLATFORM_SECURE"] == "1"
    clean = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def _ui_paths() -> list[str]:
    """Every page that takes no argument (the API and admin have their own tests)."""
    found = []

    def walk(patterns, prefix=""):
        for p in patterns:
            text = prefix + str(p.pattern)
            if isinstance(p, URLResolver):
                walk(p.url_patterns, text)
            elif isinstance(p, URLPattern) and "<" not in text and "(?P" not in text and "^" not in text:
                found.append("/" + text)

    walk(get_resolver().url_patterns)
    return sorted(p for p in found if not p.startswith(("/admin", "/api/v1", "/oidc", "/logout")))


HEADERS = {
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
}


@pytest.mark.django_db
def test_every_page_says_no_framing_no_inline_scripts_and_a_strict_referrer(cast):
    client = Client()
    client.force_login(cast.pat)
    paths = [*_ui_paths(), "/api/v1/tenants/", "/api/docs/", "/no-such-page/x/"]
    assert {"/", "/login/", "/tenants/", "/inventory/", "/queues/", "/healthz", "/metrics"} <= set(paths)
    for path in paths:
        response = client.get(path)
        assert response.status_code in (200, 302, 404), (path, response.status_code)
        for header, value in HEADERS.items():
            assert response.headers.get(header) == value, (path, header)
        policy = dict(
            d.strip().split(" ", 1)
            for d in response.headers["Content-Security-Policy"].split(";")
            if d.strip()
        )
        assert policy["script-src"] == "'self'", path  # no 'unsafe-inline', no CDN
        assert policy["frame-ancestors"] == "'none'" and policy["object-src"] == "'none'", path
        assert policy["default-src"] == "'self'", path
