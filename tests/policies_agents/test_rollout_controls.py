"""A platform-admin pauses, resumes, aborts and rolls back a rollout, through the services, the API and
the rollout page (issue 27): the driver starts no node while paused, an abort leaves applied nodes on
the new revision and the rest on what they ran, a roll back makes the next revision with the old
bundle and puts the reached nodes on it. Agents speak through the delivery services."""

from __future__ import annotations

import secrets
from datetime import timedelta

import pytest
from django.utils import timezone

from gpuplatform.audit.models import AuditEvent
from gpuplatform.errors import Conflict, Forbidden
from policies.models import NodeAgent, NodePolicyState, PolicyRevision, Rollout
from policies.services.delivery import report_status
from policies.services.rollout_controls import (
    abort_rollout,
    pause_rollout,
    resume_rollout,
    roll_back_rollout,
)
from policies.services.rollouts import advance_rollout, start_rollout
from tests.policies.factories import h100_pool
from tests.policies_agents.factories import bundle, revision

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool(cast):
    """Three nodes, each with a live agent; r1 and r2 carry different bundles (no drain)."""
    pool = h100_pool("h100", nodes=3)
    for node in pool.nodes.order_by("name"):
        NodeAgent.objects.create(
            cluster=pool.cluster,
            node=node,
            credential_hash=secrets.token_hex(32),
            rotate_after=timezone.now() + timedelta(days=1),
        )
    revision(pool, bundle("all-disabled", note="r1"))
    revision(pool, bundle("all-disabled", note="r2"))
    return pool


def rev(pool, number: int) -> PolicyRevision:
    return PolicyRevision.objects.get(pool=pool, number=number)


def applies(pool, node: str) -> None:
    """The node's agent applies whatever it was sent."""
    row = NodePolicyState.objects.select_related("desired_revision").get(node__name=node)
    agent = NodeAgent.objects.get(node__name=node)
    target = row.desired_revision
    report_status(agent=agent, revision=target.number, content_hash=target.content_hash, state="applied")


def states(pool) -> dict[str, tuple[str, int | None, int | None]]:
    """Each reached node's (state, desired revision, applied revision); untouched nodes left out."""
    rows = NodePolicyState.objects.filter(node__pool=pool, desired_revision__isnull=False).select_related(
        "desired_revision"
    )
    return {
        r.node.name: (r.state, r.desired_revision.number if r.desired_revision else None, r.applied_revision)
        for r in rows.order_by("node__name")
    }


def roll_out(cast, pool, number: int, *, until: int) -> Rollout:
    """Start r``number`` one node at a time and let ``until`` nodes apply it."""
    rollout = start_rollout(actor=cast.pat, pool_id=pool.pk, revision_id=rev(pool, number).pk)
    for i in range(until):
        advance_rollout(rollout_id=rollout.pk)
        applies(pool, f"h100-node-{i}")
    advance_rollout(rollout_id=rollout.pk)
    rollout.refresh_from_db()
    return rollout


def test_a_paused_rollout_starts_no_further_node_and_resumes_where_it_stopped(cast, pool):
    # given r1 reaching its first node
    rollout = start_rollout(actor=cast.pat, pool_id=pool.pk, revision_id=rev(pool, 1).pk)
    advance_rollout(rollout_id=rollout.pk)
    assert states(pool) == {"h100-node-0": ("pending", 1, None)}
    # when pat pauses it, and the first node applies meanwhile
    assert pause_rollout(actor=cast.pat, rollout_id=rollout.pk).state == "paused"
    applies(pool, "h100-node-0")
    advance_rollout(rollout_id=rollout.pk)
    # then the node already given r1 finished, and no other node was started
    assert states(pool) == {"h100-node-0": ("applied", 1, 1)}
    with pytest.raises(Conflict) as refused:
        start_rollout(actor=cast.pat, pool_id=pool.pk, revision_id=rev(pool, 2).pk)
    assert refused.value.code == "rollout.already_running"  # a paused rollout still holds the pool
    # when resumed, it goes on with the next node
    assert resume_rollout(actor=cast.pat, rollout_id=rollout.pk).state == "running"
    advance_rollout(rollout_id=rollout.pk)
    assert states(pool)["h100-node-1"] == ("pending", 1, None)
    actions = set(AuditEvent.objects.filter(object_id=str(rollout.pk)).values_list("action", flat=True))
    assert {"rollout.paused", "rollout.resumed"} <= actions


def test_an_abort_keeps_applied_nodes_and_leaves_the_others_on_what_they_ran(cast, pool):
    # given r1 applied on all three nodes, then r2 applied on node-0 and handed to node-1
    roll_out(cast, pool, 1, until=3)
    rollout = start_rollout(actor=cast.pat, pool_id=pool.pk, revision_id=rev(pool, 2).pk)
    advance_rollout(rollout_id=rollout.pk)
    applies(pool, "h100-node-0")
    advance_rollout(rollout_id=rollout.pk)
    assert states(pool)["h100-node-1"] == ("pending", 2, 1)
    # when pat aborts it
    aborted = abort_rollout(actor=cast.pat, rollout_id=rollout.pk)
    # then node-0 keeps r2, node-1 is back on r1 (nothing more is handed to it), node-2 never moved
    assert aborted.state == "cancelled" and aborted.get_state_display() == "aborted"
    assert states(pool) == {
        "h100-node-0": ("applied", 2, 2),
        "h100-node-1": ("applied", 1, 1),
        "h100-node-2": ("applied", 1, 1),
    }
    assert aborted.message == "aborted by pat: 1 node(s) keep r2, 1 stay on what they ran"
    # audited in the shape of a stop: who, the state before and after, what was kept and stopped
    event = AuditEvent.objects.get(action="rollout.aborted", object_id=str(rollout.pk))
    assert (event.actor, event.before, event.after) == (
        cast.pat,
        {"state": "running"},
        {"state": "cancelled", "kept": 1, "stopped": 1, "message": aborted.message},
    )
    advance_rollout(rollout_id=rollout.pk)  # a late driver pass changes nothing
    assert states(pool)["h100-node-1"] == ("applied", 1, 1)
    with pytest.raises(Conflict):
        resume_rollout(actor=cast.pat, rollout_id=rollout.pk)


def test_a_roll_back_makes_the_next_revision_with_the_old_bundle_for_the_nodes_reached(cast, pool):
    roll_out(cast, pool, 1, until=3)
    rollout = roll_out(cast, pool, 2, until=1)
    assert rollout.state == "running" and states(pool)["h100-node-1"] == ("pending", 2, 1)
    # when pat rolls it back
    back = roll_back_rollout(actor=cast.pat, rollout_id=rollout.pk)
    # then r3 carries r1's bundle and goes at once to the two nodes r2 reached
    r3 = rev(pool, 3)
    assert (back.kind, back.revision_id, back.from_revision_id) == ("rollback", r3.pk, rev(pool, 2).pk)
    assert r3.content_hash == rev(pool, 1).content_hash and r3.policy["rollback_of"] == 1
    rollout.refresh_from_db()
    assert rollout.state == "cancelled" and rollout.rolled_back_by_id == back.pk
    assert rollout.message == "rolled back by pat"
    assert states(pool) == {
        "h100-node-0": ("pending", 3, 2),
        "h100-node-1": ("applied", 3, 1),  # it still ran r1's bundle: nothing to deliver
        "h100-node-2": ("applied", 1, 1),
    }
    applies(pool, "h100-node-0")
    advance_rollout(rollout_id=back.pk)
    back.refresh_from_db()
    assert states(pool)["h100-node-0"] == ("applied", 3, 3)
    with pytest.raises(Conflict) as twice:
        roll_back_rollout(actor=cast.pat, rollout_id=rollout.pk)
    assert twice.value.code == "rollout.already_rolled_back"


def test_only_platform_admins_control_rollouts(cast, pool):
    rollout = start_rollout(actor=cast.pat, pool_id=pool.pk, revision_id=rev(pool, 1).pk)
    for control in (pause_rollout, abort_rollout, roll_back_rollout):
        with pytest.raises(Forbidden):
            control(actor=cast.rita, rollout_id=rollout.pk)
    assert Rollout.objects.get(pk=rollout.pk).state == "running"


def test_the_api_pauses_resumes_aborts_and_rolls_back(cast, api, pool):
    roll_out(cast, pool, 1, until=3)
    rollout = roll_out(cast, pool, 2, until=1)
    pat = api(cast.pat)
    url = f"/api/v1/rollouts/{rollout.pk}"
    assert pat.post(f"{url}/pause/").json()["state"] == "paused"
    refused = pat.post(f"{url}/pause/")
    assert refused.status_code == 409 and refused.json()["code"] == "rollout.not_running"
    assert pat.post(f"{url}/resume/").json()["state"] == "running"
    back = pat.post(f"{url}/rollback/")
    assert back.status_code == 201 and back.json()["kind"] == "rollback"
    assert pat.post(f"/api/v1/rollouts/{back.json()['id']}/abort/").json()["state"] == "cancelled"
    # a tenant-admin does not see platform rollouts at all
    assert api(cast.alice).post(f"{url}/pause/").status_code == 404


def test_the_rollout_page_pauses_in_place_and_asks_to_confirm_an_abort(cast, client, pool):
    rollout = start_rollout(actor=cast.pat, pool_id=pool.pk, revision_id=rev(pool, 1).pk)
    advance_rollout(rollout_id=rollout.pk)
    client.force_login(cast.pat)
    page = client.get(f"/policies/rollouts/{rollout.pk}/").content.decode()
    assert 'hx-trigger="every 3s"' in page and ">Pause</button>" in page
    assert "Nodes that applied this revision keep it" in page  # the abort states its consequence
    # pause through htmx: the live part comes back, saying so, and still polling (paused is active)
    live = client.post(f"/policies/rollouts/{rollout.pk}/pause/", HTTP_HX_REQUEST="true").content.decode()
    assert "Paused." in live and "<strong>paused</strong>" in live and ">Resume</button>" in live
    # an abort without the confirmation ticked changes nothing
    live = client.post(f"/policies/rollouts/{rollout.pk}/abort/", HTTP_HX_REQUEST="true").content.decode()
    assert "Tick the confirmation first" in live
    assert Rollout.objects.get(pk=rollout.pk).state == "paused"
    live = client.post(
        f"/policies/rollouts/{rollout.pk}/abort/", {"confirm": "yes"}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert "<strong>aborted</strong>" in live and "hx-trigger" not in live  # finished: polling stops
    # rita (an admin of tenants, not of the platform) gets a 404
    client.force_login(cast.rita)
    assert client.post(f"/policies/rollouts/{rollout.pk}/resume/").status_code == 404
