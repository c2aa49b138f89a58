"""Findings 2, 3 and 10 (webhook secrets): where the server connects when a user types the address.

Alert receivers, metrics sources and single sign-on pass one outbound policy (gpuplatform.outbound):
metadata and link-local never, loopback and private ranges only when OUTBOUND_ALLOWED_NETWORKS names
them, checked again when connecting (a name rebound after it was saved), redirects not followed, and
what a remote server answered never shown back. A webhook's URL (its path is often its secret) is shown
whole to platform-admins only, and its signing secret is encrypted at rest.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.core.checks import run_checks
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from gpuplatform.audit.models import AuditEvent
from metering.models import AlertDelivery, AlertReceiver, MeteredHour, MetricsSource
from metering.services.collection import meter_usage_hour
from metering.slos.services import deliver
from tenants.sso import discovery
from tests.helpers import assert_problem
from tests.inventory import factories as inv
from tests.metering import factories as met
from tests.metering.scenario import HOUR, build_fleet, the_hour

pytestmark = pytest.mark.django_db

LATER = datetime(2025, 3, 20, tzinfo=UTC)
SECRET_PATH = "/services/T0001/B0002/hunter2-bearer-secret"


@pytest.fixture(autouse=True)
def _production_outbound(settings):
    """Production's default: no loopback or private address is allow-listed."""
    settings.OUTBOUND_ALLOWED_NETWORKS = []


class Recorder:
    """A real HTTP server on a loopback address: records every request; answers what ``reply`` says."""

    def __init__(self, host: str = "127.0.0.1", reply: tuple[int, dict[str, str], bytes] = (204, {}, b"")):
        self.hits: list[tuple[str, str, dict[str, str], bytes]] = []
        self.reply = reply
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                recorder.hits.append((self.command, self.path, dict(self.headers), body))
                status, headers, payload = recorder.reply
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _answer

            def log_message(self, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer((host, 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.port = self.server.server_address[1]
        self.url = f"http://{host}:{self.port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    server = Recorder()
    yield server
    server.close()


@pytest.fixture
def rebinding(monkeypatch) -> dict[str, str]:
    """A resolver we steer: names in the returned dict resolve to the address it holds now. The system
    resolver is not our code; everything else still goes to it."""
    answers: dict[str, str] = {}
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(host, str) and host.rstrip(".") in answers:
            address = answers[host.rstrip(".")]
            return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port or 0))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return answers


def add_receiver(api, cast, url: str, secret: str = ""):
    body = {"name": "oncall", "url": url, "secret": secret}
    return api(cast.pat).post("/api/v1/alert-receivers/", body, format="json")


def delivery_to(receiver: AlertReceiver) -> AlertDelivery:
    alert = met.slo_alert()
    return AlertDelivery.objects.create(
        alert=alert, receiver=receiver, event="firing", payload={"event": "x"}
    )


# ----------------------------------------------------------------------------- alert receivers


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "https://169.254.169.254/latest/meta-data/",
        "https://metadata.google.internal/computeMetadata/v1/",
        "https://[fd00:ec2::254]/latest/meta-data/",
        "https://[::ffff:169.254.169.254]/latest/",
        "http://[::1]:6379/",
        "https://127.0.0.1:6443/",
        "https://localhost/hook",
        "https://10.0.0.5/hook",
        "https://192.168.1.10/hook",
        "https://[fe80::1]/hook",
    ],
)
def test_alert_receiver_to_an_internal_or_metadata_address_is_refused(cast, api, url):
    refused = add_receiver(api, cast, url)

    assert_problem(refused, 400, "outbound.address_refused")
    assert not AlertReceiver.objects.exists()
    assert not AuditEvent.objects.filter(action="alert_receiver.created").exists()


def test_alert_receiver_over_plain_http_to_a_public_name_is_refused(cast, api, rebinding):
    rebinding["hooks.example.test"] = "93.184.216.34"

    assert_problem(add_receiver(api, cast, "http://hooks.example.test/hook"), 400, "outbound.insecure_scheme")
    assert not AlertReceiver.objects.exists()


def test_alert_delivery_redirected_to_a_refused_address_is_not_followed(cast, api, settings):
    # given: a receiver on an allow-listed address that redirects to one that is not (127.0.0.2)
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    target = Recorder(host="127.0.0.2")
    hop = Recorder(reply=(307, {"Location": f"{target.url}/stolen"}, b"<html>INTERNAL-BODY</html>"))
    try:
        created = add_receiver(api, cast, f"{hop.url}/hook", secret="signing-secret")
        assert created.status_code == 201, created.content

        # when
        done = deliver(delivery_id=delivery_to(AlertReceiver.objects.get()).pk)

        # then: the redirect is an answer like any other failure, and nothing reached the target
        assert len(hop.hits) == 1
        assert target.hits == []
        assert (done.state, done.last_status) == ("pending", 307)
        assert "redirect" in done.last_error
        shown = api(cast.pat).get(f"/api/v1/alert-deliveries/{done.pk}/").content.decode()
        assert "INTERNAL-BODY" not in shown and "stolen" not in shown
    finally:
        hop.close()
        target.close()


def test_alert_receiver_rebound_to_loopback_after_saving_is_refused_at_connect_time(
    cast, api, settings, rebinding, recorder
):
    # given: a name that pointed at an allowed address when the receiver was saved
    settings.OUTBOUND_ALLOWED_NETWORKS = ["198.51.100.0/24"]
    rebinding["hooks.rebind.test"] = "198.51.100.7"
    created = add_receiver(api, cast, f"http://hooks.rebind.test:{recorder.port}/hook")
    assert created.status_code == 201, created.content

    # when: it now resolves to the loopback address where something internal listens
    rebinding["hooks.rebind.test"] = "127.0.0.1"
    done = deliver(delivery_id=delivery_to(AlertReceiver.objects.get()).pk)

    # then
    assert recorder.hits == []
    assert done.last_status is None
    assert "refused address" in done.last_error and "loopback" in done.last_error


def test_alert_receiver_saved_before_the_policy_is_refused_at_send_time(cast, recorder):
    # A row written before vetting existed (or by a migration) is not trusted either.
    receiver = AlertReceiver.objects.create(name="old", url=f"{recorder.url}{SECRET_PATH}")

    done = deliver(delivery_id=delivery_to(receiver).pk)

    assert recorder.hits == []
    assert "refused address" in done.last_error
    assert "hunter2" not in done.last_error


def test_finance_sees_a_webhook_url_without_its_secret_path_and_the_audit_log_never_has_it(
    cast, api, rebinding
):
    rebinding["hooks.slack.test"] = "93.184.216.34"
    created = add_receiver(api, cast, f"https://hooks.slack.test{SECRET_PATH}")
    assert created.status_code == 201, created.content

    as_finance = api(cast.fiona).get("/api/v1/alert-receivers/")
    as_admin = api(cast.pat).get("/api/v1/alert-receivers/")

    assert as_finance.status_code == 200
    assert "hunter2" not in as_finance.content.decode()
    assert as_finance.json()["results"][0]["url"] == "https://hooks.slack.test/…"
    assert as_admin.json()["results"][0]["url"] == f"https://hooks.slack.test{SECRET_PATH}"
    event = AuditEvent.objects.get(action="alert_receiver.created")
    assert "hunter2" not in json.dumps([event.before, event.after])
    audit = api(cast.pat).get("/api/v1/audit-events/")
    assert "hunter2" not in audit.content.decode()


def test_a_receivers_signing_secret_is_encrypted_at_rest_and_still_signs(cast, api, settings, recorder):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    created = add_receiver(api, cast, f"{recorder.url}/hook", secret="s3cret-signing-key")
    assert created.status_code == 201, created.content

    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM metering_alertreceiver")
        stored = cursor.fetchall()
    assert "s3cret-signing-key" not in repr(stored)
    assert "s3cret-signing-key" not in created.content.decode()

    done = deliver(delivery_id=delivery_to(AlertReceiver.objects.get()).pk)

    assert done.state == "delivered"
    _, _, headers, body = recorder.hits[0]
    expected = hmac.new(b"s3cret-signing-key", body, hashlib.sha256).hexdigest()
    assert headers["X-Gpuplatform-Signature"] == f"sha256={expected}"


# ----------------------------------------------------------------------------- metrics sources


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("http://169.254.169.254/latest/meta-data/", "outbound.address_refused"),
        ("https://metadata.google.internal/", "outbound.address_refused"),
        ("http://[::1]:6379", "outbound.address_refused"),
        ("https://10.0.0.5:9090", "outbound.address_refused"),
        ("https://localhost:9090", "outbound.address_refused"),
        ("http://prometheus.example.test:9090", "outbound.insecure_scheme"),
    ],
)
def test_metrics_source_on_an_internal_or_metadata_address_is_refused(cast, api, url, code):
    body = {"cluster": str(inv.cluster().pk), "url": url}

    refused = api(cast.pat).post("/api/v1/metrics-sources/", body, format="json")

    assert_problem(refused, 400, code)
    assert not MetricsSource.objects.exists()


@pytest.fixture
def fleet(cast):
    fleet = build_fleet()
    fleet.allocations = the_hour(fleet, cast)
    return fleet


def test_metrics_sources_answer_is_never_echoed_nor_its_redirect_followed(fleet, settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    target = Recorder(host="127.0.0.2", reply=(200, {}, b"root:x:0:0:INTERNAL-SECRET"))
    page = Recorder(reply=(200, {"Content-Type": "text/html"}, b"<html>INTERNAL-ADMIN-PAGE</html>"))
    hop = Recorder(reply=(302, {"Location": f"{target.url}/api/v1/query"}, b""))
    try:
        for server in (page, hop):
            MetricsSource.objects.update_or_create(cluster=fleet.cluster, defaults={"url": server.url})

            done = meter_usage_hour(cluster_id=fleet.cluster.pk, hour=HOUR, now=LATER)

            stored = MeteredHour.objects.get(source="prometheus").last_error
            assert done.error and not done.complete
            for text in (done.error, stored):
                assert "INTERNAL" not in text and "<html>" not in text
        assert "not a Prometheus answer" in stored or "redirect" in stored
        assert target.hits == []
    finally:
        for server in (page, hop, target):
            server.close()


def test_metrics_source_rebound_to_a_refused_address_is_refused_at_fetch_time(fleet, rebinding, recorder):
    rebinding["prometheus.rebind.test"] = "127.0.0.1"
    MetricsSource.objects.create(cluster=fleet.cluster, url=f"http://prometheus.rebind.test:{recorder.port}")

    done = meter_usage_hour(cluster_id=fleet.cluster.pk, hour=HOUR, now=LATER)

    assert recorder.hits == []
    assert "refused address" in done.error


# ----------------------------------------------------------------------------- single sign-on


def test_single_sign_on_issuer_on_a_metadata_address_fails_the_deploy_check(settings):
    settings.OIDC_ENABLED = True
    settings.OIDC_RP_CLIENT_ID, settings.OIDC_RP_CLIENT_SECRET = "gpuplatform", "secret"
    settings.OIDC_ISSUER = "https://169.254.169.254/latest"
    settings.OIDC_OP_JWKS_ENDPOINT = "https://metadata.google.internal/jwks"

    messages = [error.msg for error in run_checks() if error.id and error.id.startswith("sso.")]

    assert any("OIDC_ISSUER" in m and "metadata" in m for m in messages), messages
    assert any("OIDC_OP_JWKS_ENDPOINT" in m for m in messages), messages


def test_single_sign_on_discovery_naming_an_internal_endpoint_is_refused(settings, recorder):
    # given: the provider (allow-listed) publishes a key endpoint on a loopback address that is not
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    issuer = recorder.url
    document = {
        "issuer": issuer,
        "authorization_endpoint": f"{issuer}/authorize",
        "token_endpoint": f"{issuer}/token",
        "userinfo_endpoint": f"{issuer}/userinfo",
        "jwks_uri": "http://127.0.0.2:6379/keys",
    }
    recorder.reply = (200, {"Content-Type": "application/json"}, json.dumps(document).encode())
    settings.OIDC_ISSUER = issuer
    discovery.forget()
    try:
        # when / then
        with pytest.raises(ImproperlyConfigured) as refused:
            discovery.endpoint("OIDC_OP_JWKS_ENDPOINT")
        assert "jwks_uri" in str(refused.value)
    finally:
        discovery.forget()


def test_single_sign_on_discovery_redirect_is_not_followed(settings, recorder):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    target = Recorder(host="127.0.0.2")
    recorder.reply = (302, {"Location": f"{target.url}/.well-known/openid-configuration"}, b"")
    settings.OIDC_ISSUER = recorder.url
    discovery.forget()
    try:
        with pytest.raises(Exception):  # noqa: B017 - any failure will do, as long as nothing is followed
            discovery.endpoint("OIDC_OP_TOKEN_ENDPOINT")
        assert target.hits == []
    finally:
        discovery.forget()
        target.close()
