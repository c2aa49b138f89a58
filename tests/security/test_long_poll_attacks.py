"""The agents' long poll as an attacker meets it (issue 26 finding 1, and finding 10's "the ASGI poll
skips the per-address guard and has no cap on waiters per credential" and "the agent accepts an
http:// server"). The servers are the chart's own: each role's command as the entrypoint runs it,
with the environment the chart gives its container, started as real processes on the test database.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import secrets
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from nodeagent.client import Server
from nodeagent.config import ConfigError, load_config
from policies.models import NodeAgent
from policies.services.agents import hash_secret
from tests.deploy.chart import by_kind, named, render
from tests.deploy.environment import POD_IP, container_env, made_secrets
from tests.deploy.test_image import ENTRYPOINT, REPO, _base_env, _free_port
from tests.inventory import factories as inv
from tests.worker.conftest import database_url

POLL = "/api/v1/agents/bundle/"
PUBLIC_HOST = "gpu.example.com"
HOLD = 12  # seconds a held poll waits
SETTLE = 3.0  # long enough for a server on a busy machine to have taken in the polls sent before


class Role:
    """One Deployment's container, run as its entrypoint role with the chart's environment."""

    def __init__(self, objects: list[dict[str, Any]], deployment: str, log: Path, **extra: str) -> None:
        container = named(objects, "Deployment", deployment)["spec"]["template"]["spec"]["containers"][0]
        env = container_env(objects, container, made_secrets(database_url(), os.environ["REDIS_URL"]))
        self.port = _free_port()
        self.log = log
        self.process = subprocess.Popen(
            ["sh", str(ENTRYPOINT), *container["args"]],
            cwd=REPO,
            env={**_base_env(), **env, "PORT": str(self.port), **extra},
            stdout=log.open("ab"),
            stderr=subprocess.STDOUT,
        )
        self.probe = container["livenessProbe"]["httpGet"]["path"]
        deadline = time.monotonic() + 60
        while True:
            try:
                if self.get(self.probe, timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{deployment} did not start: {log.read_text()[-3000:]}")
            time.sleep(0.3)

    def get(
        self,
        path: str,
        *,
        timeout: float,
        credential: str = "",
        source: str = "127.0.0.1",
    ) -> tuple[int, dict[str, str], bytes]:
        """One GET from ``source`` (any 127/8 address: a client of its own), as the ingress forwards it."""
        connection = http.client.HTTPConnection(
            "127.0.0.1", self.port, timeout=timeout, source_address=(source, 0)
        )
        headers = {
            "Host": f"{POD_IP}:8000" if path == self.probe else PUBLIC_HOST,
            "X-Forwarded-Proto": "https",
        }
        if credential:
            headers["Authorization"] = f"Agent {credential}"
        try:
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            connection.close()

    def poll(
        self, credential: str, *, wait: int, source: str = "127.0.0.1"
    ) -> tuple[int, dict[str, str], bytes]:
        return self.get(
            f"{POLL}?applied=0&timeout={wait}", timeout=wait + 15, credential=credential, source=source
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def chart() -> list[dict[str, Any]]:
    return render()


@pytest.fixture
def started(transactional_db: Any, tmp_path: Path) -> Iterator[list[Role]]:
    roles: list[Role] = []
    yield roles
    for role in roles:
        role.stop()


def _agents(count: int) -> list[str]:
    """Credentials of ``count`` registered agents (committed: the servers are other processes)."""
    pool = inv.pool("h100", on=inv.cluster("prod-a"))
    credentials = []
    for index in range(count):
        node = inv.node(f"gpu-{index}", in_pool=pool)
        credential = secrets.token_urlsafe(32)
        NodeAgent.objects.create(
            cluster=node.cluster,
            node=node,
            credential_hash=hash_secret(credential),
            rotate_after=timezone.now() + timedelta(days=1),
        )
        credentials.append(credential)
    return credentials


def _poll_deployment(objects: list[dict[str, Any]]) -> str:
    """The Deployment behind the Service the ingress sends the poll path to."""
    (ingress,) = by_kind(objects, "Ingress")
    paths = {p["path"]: p for p in ingress["spec"]["rules"][0]["http"]["paths"]}
    service = named(objects, "Service", paths[POLL]["backend"]["service"]["name"])
    selector = service["spec"]["selector"]
    for deployment in by_kind(objects, "Deployment"):
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        if selector.items() <= labels.items():
            return str(deployment["metadata"]["name"])
    raise AssertionError(f"no Deployment behind {service['metadata']['name']}")


def _timed(call: Any) -> tuple[float, Any]:
    began = time.monotonic()
    result = call()
    return time.monotonic() - began, result


def _source() -> str:
    """A loopback address of this test's own: the per-address counts of other tests never meet it."""
    return f"127.{random.randint(1, 254)}.{random.randint(1, 254)}.{random.randint(2, 254)}"


def test_more_long_polls_than_the_web_roles_threads_leave_healthz_answering_fast(chart, started, tmp_path):
    credentials = _agents(8)
    # The web role with 2 threads in all; 8 polls is 4x that, on each of the chart's servers.
    web = Role(chart, "gpuplatform-web", tmp_path / "web.log", WEB_WORKERS="1", WEB_THREADS="2")
    started.append(web)
    poller = Role(chart, _poll_deployment(chart), tmp_path / "poll.log")
    started.append(poller)
    assert poller.process.args[-1] != "web"  # the ingress sends the poll to a server of its own
    with ThreadPoolExecutor(max_workers=16) as pool:
        held = [pool.submit(poller.poll, credential, wait=HOLD) for credential in credentials]
        at_web = [
            pool.submit(_timed, lambda c=credential: web.poll(c, wait=HOLD)) for credential in credentials
        ]
        time.sleep(SETTLE)
        for server in (web, poller):
            took, (status, _, _) = _timed(lambda s=server: s.get(s.probe, timeout=10))
            assert status == 200 and took < 1.0, (server.log, took)
        # The WSGI server never holds a thread for a poll: it answers at once, saying when to ask again.
        for future in at_web:
            took, (status, headers, _) = future.result(timeout=10)
            assert status == 204 and took < 5, took
            assert int(headers["retry-after"]) == HOLD
        assert not any(future.done() for future in held)  # the async server still holds every one
        took, (status, _, _) = _timed(lambda: poller.get(poller.probe, timeout=10))
        assert status == 200 and took < 1.0


def test_a_credential_holding_more_polls_than_its_cap_is_answered_429(chart, started, tmp_path):
    first, second = _agents(2)
    poller = Role(
        chart,
        _poll_deployment(chart),
        tmp_path / "poll.log",
        AGENT_POLL_MAX_PER_CREDENTIAL="2",
        AGENT_POLL_MAX_WAITERS="3",
    )
    started.append(poller)
    with ThreadPoolExecutor(max_workers=4) as pool:
        held = [pool.submit(poller.poll, first, wait=HOLD) for _ in range(2)]
        time.sleep(SETTLE)
        status, headers, body = poller.poll(first, wait=1)
        assert status == 429 and int(headers["retry-after"]) >= 1
        assert headers["content-type"] == "application/problem+json"
        assert json.loads(body)["code"] == "too_many_polls"
        # Another agent still gets in, up to the process's cap on waiters in total.
        held.append(pool.submit(poller.poll, second, wait=HOLD))
        time.sleep(SETTLE)
        status, headers, body = poller.poll(second, wait=1)
        assert status == 429 and int(headers["retry-after"]) >= 1
        assert json.loads(body)["code"] == "poll_capacity_reached"
        assert [future.result(timeout=HOLD + 15)[0] for future in held] == [204, 204, 204]
    assert poller.poll(first, wait=1)[0] == 204  # the slots are given back


def test_guessing_agent_credentials_at_the_async_poll_is_slowed_like_the_rest_of_the_api(
    chart, started, tmp_path
):
    (credential,) = _agents(1)
    poller = Role(chart, _poll_deployment(chart), tmp_path / "poll.log", API_ANON_THROTTLE_RATE="5/hour")
    started.append(poller)
    attacker, bystander = _source(), _source()
    answers = [poller.poll(secrets.token_urlsafe(32), wait=1, source=attacker)[0] for _ in range(5)]
    assert answers == [401] * 5
    status, headers, body = poller.poll(secrets.token_urlsafe(32), wait=1, source=attacker)
    assert status == 429 and int(headers["retry-after"]) >= 1
    assert json.loads(body)["code"] == "rate_limited"
    assert poller.poll(credential, wait=1, source=attacker)[0] == 429  # checked before authentication
    assert poller.poll(credential, wait=1, source=bystander)[0] == 204


@pytest.mark.parametrize(
    "url", ["http://gpu.example.com", "http://10.0.0.5:8000", "ftp://gpu.example.com", "gpu.example.com"]
)
def test_the_agent_refuses_a_server_it_would_talk_to_in_the_clear(tmp_path, url):
    config = tmp_path / "agent.yaml"
    config.write_text(
        f"server_url: {url}\npublic_key_file: key.pub\nstate_dir: state\ncluster: prod-a\nnode: gpu-0\n"
    )
    with pytest.raises(ConfigError, match="https"):
        load_config(config, environ={})
    # Through the chart's environment as well.
    with pytest.raises(ConfigError, match="https"):
        load_config(config, environ={"GPUPLATFORM_AGENT_SERVER": "http://gpu.example.com"})


@pytest.mark.parametrize(
    ("url", "extra"),
    [
        ("https://gpu.example.com", ""),
        ("http://127.0.0.1:8000", ""),  # the demo and the test suites, on this machine only
        ("http://[::1]:8000", ""),
        ("http://localhost:8000", ""),
        ("http://gpu.lab.internal", "allow_plain_http: true\n"),  # an explicit, written opt-in
    ],
)
def test_the_agent_accepts_https_loopback_or_an_explicit_opt_in(tmp_path, url, extra):
    config = tmp_path / "agent.yaml"
    config.write_text(
        f"server_url: '{url}'\npublic_key_file: key.pub\nstate_dir: state\ncluster: prod-a\nnode: gpu-0\n"
        + extra
    )
    assert load_config(config, environ={}).server_url == url


def test_an_agent_told_to_come_back_later_waits_instead_of_polling_in_a_loop():
    """A WSGI server answers the poll at once; an agent that asked again at once would be a busy loop
    against the web pods. It waits what Retry-After says, never longer than its own poll timeout."""

    class AnswersAtOnce(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(204)
            self.send_header("Retry-After", "45")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    web = ThreadingHTTPServer(("127.0.0.1", 0), AnswersAtOnce)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    try:
        server = Server(f"http://127.0.0.1:{web.server_address[1]}", ca_bundle=None, user_agent="test")
        server.credential = "x"
        assert server.poll(applied=0, timeout=30) == (None, 30.0)
        assert server.poll(applied=0, timeout=60) == (None, 45.0)
    finally:
        web.shutdown()
