"""A real OpenID Connect provider (panva's oidc-provider on Node, tests/oidc/provider.mjs) for the
single sign-on tests, registered with a client whose redirect goes to the live test server.

It signs ID tokens with an RSA key made here, so the token tests can also mint tokens with the very
key the provider publishes (expired, for another audience...) and show each is refused."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
import pytest
import requests
from cryptography.hazmat.primitives.asymmetric import rsa

from tenants.sso import discovery
from tests.browser.conftest import browser, page  # noqa: F401 - the browser tests' Chromium

HERE = Path(__file__).resolve().parent
CLIENT_ID = "gpuplatform"
KID = "test-signing-key"
# group -> grants, as an operator writes OIDC_GROUP_ROLES (the chart's oidc.groupRoles)
GROUP_ROLES = {
    "gpu-platform-admins": ["platform:platform-admin"],
    "finance-controllers": ["platform:finance"],
    "vision-leads": ["tenant:vision:tenant-admin"],
    "vision-engineers": ["tenant:vision:member"],
    "nlp-engineers": ["tenant:nlp:member"],
    "ghost-team": ["tenant:no-such-team:member"],
}


@dataclass
class Provider:
    issuer: str
    client_secret: str
    private_key: rsa.RSAPrivateKey
    accounts_file: Path
    process: subprocess.Popen[str]
    accounts: dict[str, dict[str, Any]] = field(default_factory=dict)

    def set_account(self, account_id: str, **claims: Any) -> None:
        """Who the provider knows; read at every lookup, so a change counts from the next login."""
        self.accounts[account_id] = {"email_verified": True, **claims}
        self.accounts_file.write_text(json.dumps(self.accounts))

    def mint(self, key: rsa.RSAPrivateKey | None = None, kid: str = KID, **claims: Any) -> str:
        """An ID token signed with the provider's own key (or ``key``), with these claims."""
        return jwt.encode(claims, key or self.private_key, algorithm="RS256", headers={"kid": kid})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _node_modules() -> Path:
    modules = HERE / "node_modules" / "oidc-provider"
    if not modules.is_dir():
        npm = shutil.which("npm")
        assert npm, "npm is missing: run `make system-deps` (scripts/ensure-system-deps.sh)"
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=HERE, check=True, timeout=300)
    return modules


def _start(redirect_uri: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    _node_modules()
    node = shutil.which("node")
    assert node, "node is missing: run `make system-deps` (scripts/ensure-system-deps.sh)"
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key))
    jwk.update(kid=KID, use="sig", alg="RS256")
    port = _free_port()
    issuer = f"http://127.0.0.1:{port}"
    client_secret = secrets.token_urlsafe(32)
    accounts_file = tmp_path_factory.mktemp("oidc") / "accounts.json"
    accounts_file.write_text("{}")
    clients = [
        {
            "client_id": CLIENT_ID,
            "client_secret": client_secret,
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code"],
            "response_types": ["code"],
        }
    ]
    env = {
        **os.environ,
        "OIDC_ISSUER": issuer,
        "OIDC_CLIENTS": json.dumps(clients),
        "OIDC_JWKS": json.dumps({"keys": [jwk]}),
        "OIDC_ACCOUNTS": str(accounts_file),
        "OIDC_COOKIE_KEY": secrets.token_urlsafe(32),
    }
    log = (tmp_path_factory.mktemp("oidc-log") / "oidc-provider.log").open("w")
    process = subprocess.Popen(
        [node, str(HERE / "provider.mjs")], env=env, stdout=log, stderr=subprocess.STDOUT, text=True
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            if requests.get(f"{issuer}/.well-known/openid-configuration", timeout=2).ok:
                break
        except requests.ConnectionError:
            pass
        assert process.poll() is None, f"the OIDC provider exited: see {log.name}"
        assert time.monotonic() < deadline, "the OIDC provider did not start within 30 s"
        time.sleep(0.2)
    yield Provider(issuer, client_secret, key, accounts_file, process)
    process.terminate()
    process.wait(timeout=10)
    log.close()


@pytest.fixture(scope="session")
def oidc_provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    """For tests that talk to the provider directly (Django's test client stands for the browser)."""
    yield from _start("http://testserver/oidc/callback/", tmp_path_factory)


@pytest.fixture(scope="session")
def oidc_provider_for_browser(
    live_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Provider]:
    """For the browser tests: the client's redirect goes to the live server."""
    yield from _start(f"{live_server.url}/oidc/callback/", tmp_path_factory)


def _turn_on(settings: Any, provider: Provider) -> Iterator[Provider]:
    settings.OIDC_ENABLED = True
    settings.OIDC_ISSUER = provider.issuer
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = provider.client_secret
    settings.OIDC_GROUP_ROLES = GROUP_ROLES
    settings.OIDC_PROVIDER_NAME = "Acme login"
    settings.AUTHENTICATION_BACKENDS = [
        "axes.backends.AxesStandaloneBackend",
        "django.contrib.auth.backends.ModelBackend",
        "tenants.sso.backend.GroupMappingBackend",
    ]
    discovery.forget()
    yield provider
    discovery.forget()


@pytest.fixture
def sso(settings: Any, oidc_provider: Provider) -> Iterator[Provider]:
    """Single sign-on turned on against the provider, password logins still allowed."""
    yield from _turn_on(settings, oidc_provider)


@pytest.fixture
def browser_sso(settings: Any, oidc_provider_for_browser: Provider) -> Iterator[Provider]:
    yield from _turn_on(settings, oidc_provider_for_browser)
