"""A rollout already running when the NVIDIA DRA driver takes its pool's MIG over (DynamicMIG, issue
30) stops on the driver's next pass: its revision's bundle drives mig-parted, which must not run beside
the driver. Over kubesim's "dra-topology" scenario: the driver's slices go, a MIG rollout starts and
reaches two nodes, the driver publishes again, the sync marks the nodes, and the next pass stops it
with the reason on the rollout page, audited; nothing more of its bundle is handed out."""

from __future__ import annotations

import copy
import secrets
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from gpuplatform.audit.models import AuditEvent
from inventory.models import Node
from inventory.services import create_cluster
from inventory.sync.runner import ClusterSync
from policies.models import NodeAgent, NodePolicyState, Rollout
from policies.services.delivery import pending_delivery, report_status
from policies.services.rollouts import advance_rollout, start_rollout
from tests.policies_agents.factories import bundle, revision

pytestmark = pytest.mark.django_db

DYNAMIC = "h200-dra-dynamic-mig"


def _slices_of(sim, names: set[str]) -> list[dict]:
    return [
        copy.deepcopy(s)
        for s in sim.store.list_readonly("resourceslices")
        if s["spec"].get("nodeName") in names
    ]


def _applies(node: str) -> None:
    """The node's agent applies what it was sent."""
    row = NodePolicyState.objects.select_related("desired_revision").get(node__name=node)
    target = row.desired_revision
    report_status(
        agent=NodeAgent.objects.get(node__name=node),
        revision=target.number,
        content_hash=target.content_hash,
        state="applied",
    )


def test_a_running_mig_rollout_stops_when_the_dra_driver_takes_the_pool_over(cast, kubesim_factory):
    # given: the dra-topology scenario synced, its DynamicMIG pool's slices gone (the driver not
    # running yet): the pool's MIG is mig-parted's, so a MIG rollout may start there
    sim = kubesim_factory(scenario="dra-topology", nodes=10, seed=5)
    cluster = create_cluster(actor=cast.pat, name="sim", kubeconfig=sim.kubeconfig_path.read_text())
    sync = ClusterSync(cluster, page_size=50)
    sync.full_sync()
    managed = Node.objects.filter(cluster=cluster, name__contains=DYNAMIC).order_by("name")
    names = list(managed.values_list("name", flat=True))
    assert len(names) == 4 and all(n.driver_managed_mig for n in managed)
    pool = managed[0].pool
    assert pool is not None
    assert set(pool.nodes.values_list("name", flat=True)) == set(names)
    published = _slices_of(sim, set(names))
    for item in published:
        sim.store.delete("resourceslices", None, item["metadata"]["name"])
    sync.full_sync()
    assert not Node.objects.filter(pool=pool, driver_managed_mig=True).exists()
    for node in pool.nodes.all():
        NodeAgent.objects.create(
            cluster=cluster,
            node=node,
            credential_hash=secrets.token_hex(32),
            rotate_after=timezone.now() + timedelta(days=1),
        )
    target = revision(pool, bundle("all-balanced"))
    rollout = start_rollout(actor=cast.pat, pool_id=pool.pk, revision_id=target.pk)
    # its first node applies r1, the second is handed it
    advance_rollout(rollout_id=rollout.pk)
    _applies(names[0])
    advance_rollout(rollout_id=rollout.pk)
    assert pending_delivery(node_id=Node.objects.get(name=names[1]).pk, applied=0) is not None

    # when: the driver publishes its DynamicMIG slices again, the sync marks the nodes, and the
    # driver passes over the rollout
    for item in published:
        for key in ("resourceVersion", "uid", "creationTimestamp"):
            item["metadata"].pop(key, None)
        item["spec"]["pool"]["generation"] += 1
        sim.store.create("resourceslices", item)
    sync.full_sync()
    assert Node.objects.filter(pool=pool, driver_managed_mig=True).count() == 4
    advance_rollout(rollout_id=rollout.pk)

    # then: stopped for good (aborted, by the platform): the node that applied r1 keeps it, the one
    # handed it is handed nothing more, the two never reached stay untouched
    rollout.refresh_from_db()
    assert (rollout.state, rollout.get_state_display()) == ("cancelled", "aborted")
    assert rollout.finished_at is not None
    rows = {
        r.node.name: (r.state, r.desired_revision_id, r.applied_revision)
        for r in NodePolicyState.objects.filter(node__pool=pool, rollout=rollout)
    }
    assert rows == {names[0]: ("applied", target.pk, 1), names[1]: ("pending", None, None)}
    for name in names:
        assert pending_delivery(node_id=Node.objects.get(name=name).pk, applied=0) is None
    where = ", ".join(names[:3]) + " and more"
    assert rollout.message == (
        f"Stopped: the NVIDIA DRA driver manages MIG on {pool.name}'s nodes ({where}) with DynamicMIG, "
        "creating MIG partitions per claim, and mig-parted must not run beside it; r1 would push "
        "label nvidia.com/mig.config=all-balanced, file mig-parted/config.yaml. Declare mode dra and "
        "publish a new revision. 1 node(s) keep r1, 1 stay on what they ran."
    )
    stopped = AuditEvent.objects.get(action="rollout.stopped", object_id=str(rollout.pk))
    assert (stopped.actor, stopped.before, stopped.after["code"]) == (
        None,
        {"state": "running"},
        "rollout.driver_managed_mig",
    )
    assert (stopped.after["kept"], stopped.after["stopped"], stopped.after["nodes"]) == (1, 1, names)
    # the reason on the rollout page, and the pool free for a dra revision's rollout
    browser = Client()
    browser.force_login(cast.pat)
    page = browser.get(f"/policies/rollouts/{rollout.pk}/").content.decode()
    assert "mig-parted must not run beside it" in page and "<strong>aborted</strong>" in page
    assert not Rollout.objects.filter(pool=pool, state__in=["running", "paused"]).exists()
    # a further pass changes nothing
    advance_rollout(rollout_id=rollout.pk)
    assert AuditEvent.objects.filter(action="rollout.stopped").count() == 1
