"""The service's own metrics at /metrics: they parse with Prometheus' text parser, count requests by
route pattern (never by path), show the inventory's sync state and physical cards, and admission's
decisions with their reasons; the endpoint is closed in secure mode unless a token or a
platform-admin asks."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from tests.core.test_platform import REPO, process_env
from tests.quotas.conftest import make_catalog

pytestmark = pytest.mark.django_db

TOKEN = "scrape-token-for-tests"


@pytest.fixture(autouse=True)
def metrics_token(settings):
    settings.METRICS_TOKEN = TOKEN


def scrape(client: Client | None = None, **headers: Any) -> dict[str, list]:
    headers.setdefault("HTTP_AUTHORIZATION", f"Bearer {TOKEN}")
    response = (client or Client()).get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    families: dict[str, list] = {}
    for family in text_string_to_metric_families(response.content.decode()):
        families.setdefault(family.name, []).extend(family.samples)
    return families


def value(families: dict[str, list], sample: str, **labels: str) -> float:
    name = sample.removesuffix("_count").removesuffix("_total").removesuffix("_bucket")
    for family_name in (name, sample):
        for s in families.get(family_name, []):
            if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
    return 0.0


def test_requests_are_counted_by_route_pattern_not_by_path(cast, api):
    before = scrape()
    client = api(cast.alice)
    for _ in range(3):
        assert client.get(f"/api/v1/tenants/{cast.vision.pk}/").status_code == 200
    assert client.get("/api/v1/tenants/00000000-0000-0000-0000-000000000000/").status_code == 404
    after = scrape()
    route = "api/v1/tenants/<pk>/"
    count = "gpuplatform_http_request_duration_seconds_count"
    assert (
        value(after, count, route=route, method="GET", status="2xx")
        - value(before, count, route=route, method="GET", status="2xx")
        == 3
    )
    assert (
        value(after, count, route=route, method="GET", status="4xx")
        - value(before, count, route=route, method="GET", status="4xx")
        == 1
    )
    labels = {s.labels.get("route") for s in after["gpuplatform_http_request_duration_seconds"]}
    assert not any(str(cast.vision.pk) in (r or "") for r in labels)


def test_admission_decisions_are_counted_with_their_reasons(cast, api):
    make_catalog(cast)  # vision's nominal is 4 of the h100 flavor
    client = api(cast.alice)
    before = scrape()
    body = {"tenant": "vision", "flavor": "h100", "amount": 2, "priority_class": "batch"}
    for _ in range(2):
        assert client.post("/api/v1/capacity-requests/", body, format="json").status_code == 201
    after = scrape()
    metric = "gpuplatform_admission_decisions_total"
    assert (
        value(after, metric, to_state="admitted", reason="admit")
        - value(before, metric, to_state="admitted", reason="admit")
        == 2
    )
    assert value(after, "gpuplatform_capacity_requests", state="admitted") == 2


def test_only_the_token_or_a_platform_admin_reads_the_metrics(cast, settings):
    for headers in ({}, {"HTTP_AUTHORIZATION": "Bearer wrong"}):
        response = Client(headers={"Authorization": headers["HTTP_AUTHORIZATION"]} if headers else None).get(
            "/metrics"
        )
        assert response.status_code == 401
        assert response["Content-Type"] == "application/problem+json"
        assert response.json()["code"] == "metrics.token_required"
    member = Client()
    member.force_login(cast.alice)  # a tenant-admin: the metrics name other tenants' dedicated pools
    assert member.get("/metrics").status_code == 401
    admin = Client()
    admin.force_login(cast.pat)
    assert admin.get("/metrics").status_code == 200
    settings.METRICS_TOKEN = ""  # no token configured: still only platform-admins
    assert Client().get("/metrics").status_code == 401
    assert admin.get("/metrics").status_code == 200


def test_json_logs_carry_the_request_id():
    program = (
        "import django, logging; django.setup()\n"
        "from gpuplatform.observability.request_id import bind_request_id\n"
        "bind_request_id('req-42')\n"
        "logging.getLogger('gpuplatform.test').warning('quota %s', 'changed')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program],
        cwd=REPO,
        env=process_env(LOG_FORMAT="json", DJANGO_SETTINGS_MODULE="gpuplatform.settings"),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    line = json.loads(result.stderr.strip().splitlines()[-1])
    assert line["request_id"] == "req-42"
    assert (line["level"], line["logger"], line["message"]) == (
        "WARNING",
        "gpuplatform.test",
        "quota changed",
    )
    assert line["time"]


def test_the_workers_endpoint_answers_only_the_metrics_token_when_one_is_set(monkeypatch):
    # What the chart's worker ServiceMonitor relies on: the same bearer token as the web's /metrics.
    import requests

    from gpuplatform.observability.task_metrics import serve_worker_metrics

    monkeypatch.setenv("METRICS_TOKEN", "s3cret-token")
    server = serve_worker_metrics(0, host="127.0.0.1")
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
        assert requests.get(url, timeout=5).status_code == 401
        assert requests.get(url, headers={"Authorization": "Bearer wrong"}, timeout=5).status_code == 401
        answered = requests.get(url, headers={"Authorization": "Bearer s3cret-token"}, timeout=5)
        assert answered.status_code == 200
        names = {f.name for f in text_string_to_metric_families(answered.text)}
        assert "gpuplatform_task_duration_seconds" in names
    finally:
        server.shutdown()
        server.server_close()
