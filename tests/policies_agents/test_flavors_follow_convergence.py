"""A published policy renames a pool's flavors only once its nodes have converged (issue 27): before,
publishing time-slicing on the T4 pool renamed the `t4-shared` flavor's resource at once, so it
offered 0 units while every node still advertised the old name. Worked by hand:

    pool t4: 2 nodes x 1 T4, each advertising 4 time-slicing replicas as nvidia.com/gpu.shared
    flavor t4-shared: nvidia.com/gpu.shared; vision's quota 8, and vision holds 2 (active request)

    published r1 (time-slicing, 4 replicas, the pool's own name nvidia.com/gpu-t4):
        the flavor keeps nvidia.com/gpu.shared: 2 nodes x 4 = 8 offered, 8 - 2 = 6 free
    node-0 applies r1 and advertises nvidia.com/gpu-t4:
        pods asking nvidia.com/gpu.shared fit only node-1: 4 offered, 4 - 2 = 2 free
    node-1 applies r1: the rollout converges, the flavor, quota and request follow:
        nvidia.com/gpu-t4: 2 x 4 = 8 offered, 6 free; quota 8 and the request's 2 under the new name
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from gpuplatform.audit.models import AuditEvent
from inventory.models import Gpu, Node, ShareableUnit
from policies.models import NodeAgent, NodePolicyState, PolicyRevision
from policies.services.delivery import report_status
from policies.services.revisions import publish_policy
from policies.services.rollouts import advance_rollout, start_rollout
from policies.services.sharing import set_sharing_policy
from quotas.models import CapacityRequest, Flavor, PriorityClass, Queue, Quota
from quotas.runner.inputs import physical_free
from tests.inventory import factories as inv

pytestmark = pytest.mark.django_db

SHARED, OWN = "nvidia.com/gpu.shared", "nvidia.com/gpu-t4"


@pytest.fixture
def t4(cast):
    pool = inv.pool("t4")
    for i in range(2):
        node = Node.objects.create(
            cluster=pool.cluster,
            pool=pool,
            name=f"t4-node-{i}",
            model_key="T4",
            gpu_count=1,
            sharing_strategy="time-slicing",
            replicas=4,
        )
        Gpu.objects.create(node=node, index=0, model_key="T4", memory_mib=15360)
        ShareableUnit.objects.create(
            cluster=pool.cluster,
            node=node,
            key=f"node/{node.name}/{SHARED}",
            kind="time_slice_replica",
            resource_name=SHARED,
            count=4,
            ge_each=Decimal("0.25"),
            model_key="T4",
        )
        NodeAgent.objects.create(
            cluster=pool.cluster,
            node=node,
            credential_hash=secrets.token_hex(32),
            rotate_after=timezone.now() + timedelta(days=1),
        )
    flavor = Flavor.objects.create(
        name="t4-shared", pool=pool, resources=[{"name": SHARED, "ge_per_unit": "1/4"}]
    )
    Quota.objects.create(tenant=cast.vision, flavor=flavor, resource=SHARED, nominal=8)
    CapacityRequest.objects.create(
        tenant=cast.vision,
        queue=Queue.objects.create(tenant=cast.vision, name="default"),
        flavor=flavor,
        priority_class=PriorityClass.objects.create(name="batch", value=100),
        amounts={SHARED: 2},
        ge=Decimal("0.5"),
        state="active",
    )
    return pool


def free() -> dict[str, int]:
    return physical_free(Flavor.objects.filter(name="t4-shared"))["t4-shared"]


def converge(node: str) -> None:
    """The node's agent applies its revision, and the device plugin then advertises the new name."""
    row = NodePolicyState.objects.select_related("desired_revision").get(node__name=node)
    report_status(
        agent=NodeAgent.objects.get(node__name=node),
        revision=row.desired_revision.number,
        content_hash=row.desired_revision.content_hash,
        state="applied",
    )
    ShareableUnit.objects.filter(node__name=node).update(resource_name=OWN, key=f"node/{node}/{OWN}")


def test_the_flavor_keeps_offering_what_the_nodes_advertise_until_they_converge(cast, t4):
    assert free() == {SHARED: 6}
    set_sharing_policy(pool_id=t4.pk, actor=cast.pat, mode="time-slicing", parameters={"replicas": 4})
    revision = publish_policy(pool_id=t4.pk, actor=cast.pat)

    # published: nothing renamed yet, the flavor offers what the nodes advertise (old code: {OWN: -2})
    assert free() == {SHARED: 6}
    assert revision.policy["resource_name"] == OWN
    published = AuditEvent.objects.get(action="policy_revision.published")
    assert published.after["flavor_renames_on_convergence"] == {SHARED: OWN}
    assert not AuditEvent.objects.filter(action="flavor.resources_renamed").exists()

    rollout = start_rollout(actor=cast.pat, pool_id=t4.pk, revision_id=revision.pk)
    advance_rollout(rollout_id=rollout.pk)
    converge("t4-node-0")
    advance_rollout(rollout_id=rollout.pk)
    assert free() == {SHARED: 2}  # only node-1 still offers the name the flavor's pods ask for
    assert Quota.objects.get().resource == SHARED

    converge("t4-node-1")
    advance_rollout(rollout_id=rollout.pk)
    rollout.refresh_from_db()
    assert rollout.state == "succeeded"
    assert free() == {OWN: 6}
    assert list(Quota.objects.values_list("resource", "nominal")) == [(OWN, 8)]
    assert CapacityRequest.objects.get().amounts == {OWN: 2}
    succeeded = AuditEvent.objects.get(action="rollout.succeeded", object_id=str(rollout.pk))
    assert succeeded.after["flavors_renamed"] == {SHARED: OWN}
    assert PolicyRevision.objects.filter(pool=t4).count() == 1
