"""A sharing policy revision rolled out to a pool's node agents, one node at a time, and the rollout
page following it in Chromium: the platform-admin declares and publishes the policy in the UI, starts
the rollout through the API, and three agents speak the agent protocol over HTTP to the live server
(register, wait for their bundle, report applying and applied); each report drives the rollout (its
Celery task run inline), and the page shows 0, 1, 2, then 3 of 3 nodes converged (issue 16)."""

from __future__ import annotations

import base64
import json
import threading
from typing import Any

import pytest
import requests
from django.db import connections
from playwright.sync_api import Page, expect

from policies.api import long_poll
from policies.models import NodePolicyState, Rollout
from tests.policies import factories as pol

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NODES = ["h100-node-0", "h100-node-1", "h100-node-2"]


@pytest.fixture
def poll_threads_let_go():
    """The long poll reads through a few threads that keep their database connection for the
    process's life (policies/api/long_poll.py); in the test process that would hold the test
    database open past the run. Each thread closes its own, once (the barrier keeps one per thread)."""
    yield
    threads = len(long_poll._DB._threads)
    if threads:
        barrier = threading.Barrier(threads)

        def close() -> None:
            connections.close_all()
            barrier.wait(timeout=30)

        for done in [long_poll._DB.submit(close) for _ in range(threads)]:
            done.result(timeout=60)


class Agent:
    """What the node agent sends (docs/agent-protocol.md), from the test, one connection per call."""

    def __init__(self, base: str, node: str, bootstrap_token: str) -> None:
        self.base, self.node = base, node
        answer = requests.post(
            f"{base}/api/v1/agents/register/",
            json={"cluster": "east", "node": node, "bootstrap_token": bootstrap_token},
            headers={"Connection": "close"},
            timeout=30,
        )
        assert answer.status_code == 201, answer.text
        self.headers = {"Authorization": "Agent " + answer.json()["credential"], "Connection": "close"}

    def wait_for_bundle(self) -> dict[str, Any] | None:
        answer = requests.get(
            f"{self.base}/api/v1/agents/bundle/",
            params={"applied": 0, "timeout": 1},
            headers=self.headers,
            timeout=30,
        )
        if answer.status_code == 204:
            return None
        assert answer.status_code == 200, answer.text
        return json.loads(base64.b64decode(answer.json()["payload"]))

    def report(self, payload: dict[str, Any], state: str) -> None:
        answer = requests.post(
            f"{self.base}/api/v1/agents/status/",
            json={"revision": payload["revision"], "content_hash": payload["content_hash"], "state": state},
            headers=self.headers,
            timeout=30,
        )
        assert answer.status_code == 204, answer.text


def test_a_policy_rollout_converges_node_by_node_on_its_page(
    transactional_db, cast, page: Page, login, http_api, shot, eager_tasks, poll_threads_let_go
):
    pool = pol.h100_pool("h100", nodes=3)
    base = login(page, "pat")

    # declare time-slicing (4 replicas a card) on the pool and publish it as r1
    page.click("nav >> text=Policies")
    page.get_by_role("link", name="h100").click()
    page.select_option("select[name=mode]", "time-slicing")
    page.fill("input[name=replicas]", "4")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".messages")).to_contain_text("Saved.")
    # no agent has registered yet: publishing says so and asks to confirm
    expect(page.get_by_test_id("agent-warning")).to_contain_text("No node agent reports")
    page.get_by_test_id("confirm-no-agent").check()
    page.get_by_role("button", name="Publish r1").click()
    expect(page.locator(".messages")).to_contain_text("Published revision 1.")
    shot(page, "published")

    # the rollout starts through the API, one node at a time; three agents register
    admin = http_api(cast.pat)
    revision = admin.get(f"/api/v1/policy-revisions/?pool={pool.pk}").json()["results"][0]
    started = admin.post(
        "/api/v1/rollouts/", {"pool": str(pool.pk), "revision": revision["id"], "max_unavailable": 1}
    )
    assert started.status_code == 201, started.text
    rollout_id = started.json()["id"]
    token = admin.post(
        "/api/v1/agent-bootstrap-tokens/",
        {"cluster": str(pool.cluster_id), "name": "rack-1", "expires_in_seconds": 600},
    ).json()["token"]
    agents = [Agent(base, node, token) for node in NODES]

    page.get_by_role("link", name="Rollouts").click()
    page.get_by_role("link", name="r1").click()
    progress = page.get_by_test_id("rollout-progress")
    expect(progress).to_contain_text("0 of 3 nodes of the pool converged on r1 (at most 1 at a time)")
    expect(page.get_by_test_id("rollout-counts")).to_have_text("pending: 1")
    shot(page, "started")

    for done, agent in enumerate(agents):
        # only the node whose turn it is gets its bundle; the next is told to ask again (under the live
        # server, a WSGI server, the poll is never held: 204 at once with Retry-After)
        payload = agent.wait_for_bundle()
        assert payload is not None and (payload["node"], payload["revision"]) == (agent.node, 1)
        if done < len(agents) - 1:
            assert agents[done + 1].wait_for_bundle() is None
        agent.report(payload, "applying")
        page.reload()
        expect(page.get_by_test_id("rollout-counts")).to_contain_text("applying: 1")
        expect(progress).to_contain_text(f"{done} of 3 nodes")
        agent.report(payload, "applied")
        page.reload()
        expect(progress).to_contain_text(f"{done + 1} of 3 nodes")
        expect(page.get_by_test_id("rollout-nodes").locator("tr", has_text=agent.node)).to_contain_text(
            "applied"
        )
        assert page.locator("progress[aria-label='nodes converged']").get_attribute("value") == str(done + 1)
        shot(page, f"{done + 1}-of-3")

    expect(page.get_by_test_id("rollout-state")).to_contain_text("apply · succeeded")
    expect(page.get_by_test_id("rollout-counts")).to_have_text("applied: 3")
    expect(progress).to_contain_text("3 of 3 nodes of the pool converged on r1.")
    shot(page, "succeeded")
    assert Rollout.objects.get(pk=rollout_id).state == "succeeded"
    waves = (
        NodePolicyState.objects.filter(state="applied")
        .order_by("node__name")
        .values_list("node__name", "wave")
    )
    assert list(waves) == [(node, wave) for wave, node in enumerate(NODES, start=1)]  # one node a wave
