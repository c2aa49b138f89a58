"""Issue 26, findings 6, 7 and 8: whose address a request comes from, whom a login lockout locks,
and who may approve a request that crosses an approval threshold.

The cast (tests/fixtures/people.py): alice administers vision, under research (rita); pat is a
platform-admin. The ingress of these tests is 10.0.0.5, its pod network 10.0.0.0/24.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import pytest
import time_machine
from django.test import Client
from rest_framework.test import APIClient

from gpuplatform.accounts.models import User
from gpuplatform.audit.models import AuditEvent
from quotas.models import Flavor, Queue
from tenants.services import add_membership
from tests.deploy.chart import named, render
from tests.deploy.environment import container_env, made_secrets
from tests.deploy.test_image import ENTRYPOINT, _base_env, _free_port, _get
from tests.helpers import assert_problem
from tests.quotas.conftest import GPU, make_catalog
from tests.worker.conftest import database_url

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
INGRESS = "10.0.0.5"
PASSWORD = "correct horse battery"


def fresh_address() -> str:
    """A documentation-range address of this test's own, so no other test's calls count against it."""
    # 64 random bits of the IPv6 documentation prefix: 250 IPv4 addresses drawn at random collided, now
    # and then, with an address another test had already throttled.
    return f"2001:db8:{secrets.token_hex(2)}:{secrets.token_hex(2)}::{secrets.token_hex(2)}"


def log_in(client: Client, username: str, password: str, forwarded_for: str = ""):
    headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
    return client.post("/login/", {"username": username, "password": password}, headers=headers)


@pytest.fixture
def behind_the_ingress(settings):
    settings.TRUSTED_PROXIES = ["10.0.0.0/24"]


@pytest.fixture
def carol(db) -> User:
    return User.objects.create_user(username="carol", password=PASSWORD)


# --- finding 6: X-Forwarded-For believed from anyone ----------------------------------------------------


def test_forged_forwarded_addresses_do_not_escape_the_token_guessing_limit(cast, settings):
    # given an attacker at one address who writes a new X-Forwarded-For on every guess
    settings.API_ANON_THROTTLE_RATE = "120/minute"  # the default (the test settings raise it)
    attacker = fresh_address()
    client = APIClient(REMOTE_ADDR=attacker)
    client.credentials(HTTP_AUTHORIZATION="Bearer gpp_abcdef123456_" + "x" * 43)
    limit = 120

    # when it sends 250 bad tokens, each "forwarded for" another address
    # (the limit counts in fixed one-minute windows: the clock stands still so 250 calls on a slow
    # machine cannot straddle two of them)
    with time_machine.travel(datetime(2026, 12, 3, 12, 0, 30, tzinfo=UTC), tick=False):
        codes = [
            client.get("/api/v1/me/", HTTP_X_FORWARDED_FOR=f"198.18.{n // 250}.{n % 250 + 1}").status_code
            for n in range(250)
        ]

    # then the limit counts them as one address, and the audit log names the real one
    assert codes[:limit] == [401] * limit and set(codes[limit:]) == {429}
    addresses = {e.after["address"] for e in AuditEvent.objects.filter(action="api_token.rejected")}
    assert addresses == {attacker}


def test_behind_a_trusted_proxy_the_client_is_the_address_the_proxy_saw(cast, behind_the_ingress):
    # the client prepends a forged entry; the ingress appends the address it really saw
    client = APIClient(REMOTE_ADDR=INGRESS)
    client.credentials(HTTP_AUTHORIZATION="Bearer gpp_abcdef123456_" + "x" * 43)

    client.get("/api/v1/me/", HTTP_X_FORWARDED_FOR="127.0.0.1, 198.51.100.77")

    event = AuditEvent.objects.get(action="api_token.rejected")
    assert event.after["address"] == "198.51.100.77"


def test_forwarded_headers_from_an_untrusted_peer_are_ignored_even_when_proxies_are_configured(
    cast, behind_the_ingress
):
    client = APIClient(REMOTE_ADDR="198.51.100.9")
    client.credentials(HTTP_AUTHORIZATION="Bearer gpp_abcdef123456_" + "x" * 43)

    client.get("/api/v1/me/", HTTP_X_FORWARDED_FOR="10.0.0.7")

    assert AuditEvent.objects.get(action="api_token.rejected").after["address"] == "198.51.100.9"


def entrypoint_command(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in {"FORWARDED_ALLOW_IPS", "TRUSTED_PROXIES"}}
    result = subprocess.run(
        ["sh", str(ROOT / "deploy" / "entrypoint.sh"), "web"],
        env={**clean, "GPUPLATFORM_ENTRYPOINT_PRINT": "1", **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


def test_gunicorn_believes_forwarded_headers_only_from_the_trusted_proxies():
    assert "--forwarded-allow-ips 127.0.0.1 " in entrypoint_command()
    assert "--forwarded-allow-ips 10.0.0.0/24 " in entrypoint_command(TRUSTED_PROXIES="10.0.0.0/24")


def test_forged_forwarded_addresses_do_not_escape_the_limit_under_the_charts_gunicorn():
    # the web role as the chart runs it (its command and environment), one worker
    objects = render()
    container = named(objects, "Deployment", "gpuplatform-web")["spec"]["template"]["spec"]["containers"][0]
    env = container_env(objects, container, made_secrets(database_url(), os.environ["REDIS_URL"]))
    port = _free_port()
    server = subprocess.Popen(
        ["sh", str(ENTRYPOINT), *container["args"]],
        cwd=ROOT,
        env={
            **_base_env(),
            **env,
            "PORT": str(port),
            "WEB_WORKERS": "1",
            "API_ANON_THROTTLE_RATE": "20/hour",  # hour windows: 30 calls never straddle two
            "CACHE_KEY_PREFIX": f"xff-{secrets.token_hex(4)}",  # no other test's 401s from 127.0.0.1
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert _get(port, "/readyz", host="10.42.0.17:8000", within=60).status == 200
        codes = []
        for n in range(30):
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/api/v1/me/",
                headers={
                    "Host": "gpu.example.com",
                    "X-Forwarded-Proto": "https",
                    "X-Forwarded-For": f"198.18.0.{n + 1}",
                    "Authorization": "Bearer gpp_abcdef123456_" + "x" * 43,
                },
            )
            try:
                codes.append(urllib.request.urlopen(request, timeout=10).status)
            except urllib.error.HTTPError as exc:
                codes.append(exc.code)
    finally:
        server.terminate()
        server.wait(timeout=30)

    assert codes[:20] == [401] * 20 and set(codes[20:]) == {429}


def test_the_chart_names_the_ingress_as_the_only_trusted_proxy():
    trusted = named(render({"trustedProxies": ["10.244.0.0/16"]}), "ConfigMap", "gpuplatform")
    default = named(render(), "ConfigMap", "gpuplatform")

    assert trusted["data"]["TRUSTED_PROXIES"] == "10.244.0.0/16"
    # the private ranges by default: the ingress controller's pods are in the pod CIDR, and with no
    # trusted proxy every client behind the ingress would share its limits
    assert default["data"]["TRUSTED_PROXIES"] == "10.0.0.0/8,172.16.0.0/12,192.168.0.0/16"


# --- finding 7: one client locks everyone out -------------------------------------------------------------


def test_wrong_passwords_for_carol_from_one_address_do_not_lock_carol_out_elsewhere(carol, settings):
    attacker = Client(REMOTE_ADDR=fresh_address())
    for n in range(20):
        log_in(attacker, "carol", f"wrong-{n}")

    answer = log_in(Client(REMOTE_ADDR=fresh_address()), "carol", PASSWORD)

    assert answer.status_code == 302
    # the attacker's own pair stays locked
    assert log_in(attacker, "carol", PASSWORD).status_code == 429


def test_twenty_wrong_passwords_for_admin_through_the_ingress_do_not_lock_carol_out(
    cast, carol, behind_the_ingress
):
    # given one client behind the ingress that guesses the platform-admin's password twenty times
    ingress = Client(REMOTE_ADDR=INGRESS)
    attacker = fresh_address()
    for n in range(20):
        log_in(ingress, "pat", f"wrong-{n}", forwarded_for=attacker)

    # when carol logs in through the same ingress, from her own address
    answer = log_in(ingress, "carol", PASSWORD, forwarded_for=fresh_address())

    # then she is in, and the guesser is the one paused
    assert answer.status_code == 302
    assert log_in(Client(REMOTE_ADDR=INGRESS), "pat", "pw-pat", forwarded_for=attacker).status_code == 429


def test_an_address_guessing_many_usernames_is_slowed_and_no_other_address_is(cast, carol, settings):
    settings.LOGIN_ADDRESS_FAILURE_RATE = "10/minute"
    guesser = Client(REMOTE_ADDR=fresh_address())

    # The rate counts in fixed one-minute windows: the clock stands still so that the guesses cannot
    # straddle two windows on a slow machine (they did, under load, and the eleventh got a fresh minute).
    with time_machine.travel(datetime(2026, 12, 3, 12, 0, 30, tzinfo=UTC), tick=False):
        codes = [log_in(guesser, f"user-{n}", "password").status_code for n in range(15)]

        assert codes[:10] == [200] * 10 and set(codes[10:]) == {429}
        assert log_in(guesser, "carol", PASSWORD).status_code == 429
        assert log_in(Client(REMOTE_ADDR=fresh_address()), "carol", PASSWORD).status_code == 302


# --- finding 8: approval through a child tenant -------------------------------------------------------------

URL = "/api/v1/capacity-requests/"


def make_vision_sec(cast, api, *, erin_role: str) -> User:
    """What alice, tenant-admin of vision, may do alone: a child tenant with 8 of vision's 10 H100s
    and erin in it. The approval threshold of h100 is 6."""
    catalog = make_catalog(cast, vision=10)
    Flavor.objects.filter(pk=catalog.flavor.pk).update(approval_above=6)
    created = api(cast.alice).post(
        "/api/v1/tenants/",
        {"slug": "vision-sec", "display_name": "Vision Sec", "parent_id": str(cast.vision.pk)},
        format="json",
    )
    assert created.status_code == 201, created.json()
    sec_id = created.json()["id"]
    Queue.objects.create(tenant_id=sec_id, name="default")
    quota = {"tenant": sec_id, "flavor": str(catalog.flavor.pk), "resource": GPU, "nominal": 8}
    assert api(cast.alice).post("/api/v1/quotas/", quota, format="json").status_code == 201
    erin = User.objects.create_user(username="erin", password="pw-erin")
    add_membership(actor=cast.alice, tenant_id=sec_id, username="erin", role=erin_role)
    return erin


@pytest.fixture
def vision_sec_with_erin(cast, api) -> User:
    return make_vision_sec(cast, api, erin_role="member")


def erin_asks_seven_h100(api, erin) -> dict:
    response = api(erin).post(URL, {"tenant": "vision-sec", "flavor": "h100", "amount": 7}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["state"], body["reason_code"]) == ("pending", "awaiting_approval")
    return body


def test_a_tenant_admin_cannot_approve_a_request_from_a_child_she_created_for_it(
    cast, api, vision_sec_with_erin
):
    asked = erin_asks_seven_h100(api, vision_sec_with_erin)

    answer = api(cast.alice).post(f"{URL}{asked['id']}/approve/", {}, format="json")

    assert_problem(answer, 403, "approver_not_above")
    assert not AuditEvent.objects.filter(action="capacity_request.approved").exists()


def test_an_admin_above_the_tenant_whose_threshold_is_crossed_approves_it(cast, api, vision_sec_with_erin):
    asked = erin_asks_seven_h100(api, vision_sec_with_erin)

    answer = api(cast.rita).post(f"{URL}{asked['id']}/approve/", {}, format="json")

    assert answer.status_code == 200 and answer.json()["approval"] == "approved"


def test_a_tenant_admin_appointed_below_by_alice_does_not_make_alice_an_approver(cast, api):
    # alice makes erin tenant-admin of the child she made: erin's authority is alice's creation
    erin = make_vision_sec(cast, api, erin_role="tenant-admin")
    asked = erin_asks_seven_h100(api, erin)

    answer = api(cast.alice).post(f"{URL}{asked['id']}/approve/", {}, format="json")

    assert_problem(answer, 403, "approver_not_above")
    assert api(cast.rita).post(f"{URL}{asked['id']}/approve/", {}, format="json").status_code == 200
