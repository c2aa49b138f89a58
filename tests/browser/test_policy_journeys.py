"""The platform-admin's sharing-policy journeys in Chromium, without the API (issue 27): the pool page
starts from what the nodes run, only the chosen mode's fields show, publishing where no agent reports
asks to confirm; a rollout is started, followed (the page refreshes itself), paused in place and
rolled back from its page. The nodes' agents report through the delivery service from the test."""

from __future__ import annotations

import secrets
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from gpuplatform.audit.models import AuditEvent
from inventory.models import Node, ShareableUnit
from policies.models import NodeAgent, NodePolicyState, PolicyRevision, Rollout
from policies.services.delivery import report_status
from tests.browser.test_page_widths import docs_shot
from tests.policies.factories import h100_pool

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def time_sliced(pool, replicas: int) -> None:
    for node in Node.objects.filter(pool=pool):
        Node.objects.filter(pk=node.pk).update(sharing_strategy="time-slicing", replicas=replicas)
        ShareableUnit.objects.create(
            cluster=node.cluster,
            node=node,
            key=f"node/{node.name}/nvidia.com/gpu.shared",
            kind="time_slice_replica",
            resource_name="nvidia.com/gpu.shared",
            count=node.gpu_count * replicas,
            ge_each=Decimal(1) / replicas,
            model_key=node.model_key,
        )


def agents_for(pool) -> None:
    for node in pool.nodes.all():
        NodeAgent.objects.create(
            cluster=pool.cluster,
            node=node,
            credential_hash=secrets.token_hex(32),
            rotate_after=timezone.now() + timedelta(days=1),
            last_seen_at=timezone.now(),
        )


def applies(node: str) -> None:
    row = NodePolicyState.objects.select_related("desired_revision").get(node__name=node)
    report_status(
        agent=NodeAgent.objects.get(node__name=node),
        revision=row.desired_revision.number,
        content_hash=row.desired_revision.content_hash,
        state="applied",
    )


def test_admin_publishes_from_what_the_nodes_run_confirming_no_agent(cast, page: Page, login, shot):
    pool = h100_pool("t4", nodes=2)
    time_sliced(pool, replicas=4)
    login(page, "pat")
    page.click("nav >> text=Policies")
    expect(page.get_by_test_id("detected-t4")).to_contain_text("time-slicing (4 replicas)")
    page.get_by_role("link", name="t4", exact=True).click()

    # the page says what runs; the form starts there, showing only time-slicing's fields
    expect(page.get_by_test_id("detected-mode")).to_have_text("time-slicing")
    expect(page.locator("select[name=mode]")).to_have_value("time-slicing")
    expect(page.locator("input[name=replicas]")).to_have_value("4")
    expect(page.locator("input[name=replicas]")).to_be_visible()
    expect(page.locator("textarea[name=geometry]")).to_be_hidden()
    page.select_option("select[name=mode]", "mig")
    expect(page.locator("textarea[name=geometry]")).to_be_visible()
    expect(page.locator("input[name=replicas]")).to_be_hidden()
    page.select_option("select[name=mode]", "time-slicing")
    docs_shot(page, "sharing-policy-detected")
    shot(page, "detected")

    # Save unchanged declares what runs; no agent reports, so publishing warns and needs a tick
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".messages")).to_contain_text("Saved.")
    expect(page.locator(".messages")).to_contain_text("No node agent reports")
    page.get_by_role("button", name="Publish r1").click()
    expect(page.locator(".messages")).to_contain_text("Confirm to publish all the same.")
    assert not PolicyRevision.objects.filter(pool=pool).exists()
    page.get_by_test_id("confirm-no-agent").check()
    page.get_by_role("button", name="Publish r1").click()
    expect(page.locator(".messages")).to_contain_text("Published revision 1.")
    shot(page, "published")
    revision = PolicyRevision.objects.get(pool=pool)
    assert revision.policy["mode"] == "time-slicing" and revision.policy["parameters"]["replicas"] == 4
    event = AuditEvent.objects.get(action="policy_revision.published")
    assert event.after["no_reporting_agent_confirmed"] is True


def test_admin_starts_pauses_and_rolls_back_a_rollout_in_the_ui(cast, page: Page, login, shot, eager_tasks):
    pool = h100_pool("h100", nodes=3)
    agents_for(pool)
    login(page, "pat")
    page.goto(page.url.rstrip("/") + f"/policies/pools/{pool.pk}/")

    # r1: exclusive, published and rolled out to every node
    page.select_option("select[name=mode]", "exclusive")
    page.get_by_role("button", name="Save").click()
    page.get_by_role("button", name="Publish r1").click()
    expect(page.locator(".messages")).to_contain_text("Published revision 1.")
    page.fill("input[name=max_unavailable]", "3")
    page.get_by_role("button", name="Start rollout of r1").click()
    expect(page.locator(".messages")).to_contain_text("Rollout of r1 started.")
    for i in range(3):
        applies(f"h100-node-{i}")
    # the page follows by itself (htmx polling), no reload
    expect(page.get_by_test_id("rollout-progress")).to_contain_text("3 of 3 nodes", timeout=20_000)
    expect(page.get_by_test_id("rollout-state")).to_contain_text("succeeded")
    expect(page.get_by_role("button", name="Pause")).to_have_count(0)

    # r2: time-slicing, started one node at a time
    page.get_by_role("link", name="the pool's policy").click()
    page.select_option("select[name=mode]", "time-slicing")
    page.fill("input[name=replicas]", "4")
    page.get_by_role("button", name="Save").click()
    page.get_by_role("button", name="Publish r2").click()
    page.get_by_role("button", name="Start rollout of r2").click()
    progress = page.get_by_test_id("rollout-progress")
    expect(progress).to_contain_text("0 of 3 nodes of the pool converged on r2 (at most 1 at a time)")
    applies("h100-node-0")
    expect(progress).to_contain_text("1 of 3 nodes", timeout=20_000)
    shot(page, "running")

    # pause: in place, the page says so and offers resume
    page.get_by_role("button", name="Pause").click()
    expect(page.get_by_test_id("control-result")).to_have_text("Paused.")
    expect(page.get_by_test_id("rollout-state")).to_contain_text("paused")
    expect(page.get_by_role("button", name="Resume")).to_be_visible()
    expect(progress).to_contain_text("(paused: no further node starts)")
    rollout = Rollout.objects.get(revision__number=2)
    assert rollout.state == "paused"
    docs_shot(page, "rollout-paused")
    shot(page, "paused")

    # roll back: the confirmation states the consequence and must be ticked
    roll_back = page.get_by_role("button", name="Roll back to r1")
    consequence = page.get_by_test_id("confirm-rollback")
    expect(page.locator("label.confirm", has=consequence)).to_contain_text(
        "Every node this rollout reached is put back on the revision it ran before"
    )
    consequence.check()
    roll_back.click()
    expect(page.locator("h1")).to_have_text("Rollout of r3 on h100")
    expect(page.get_by_test_id("rollout-state")).to_contain_text("rollback")
    shot(page, "rolled-back")
    rollout.refresh_from_db()
    assert rollout.state == "cancelled" and rollout.rolled_back_by.revision.number == 3
    r3 = PolicyRevision.objects.get(pool=pool, number=3)
    assert r3.content_hash == PolicyRevision.objects.get(pool=pool, number=1).content_hash
