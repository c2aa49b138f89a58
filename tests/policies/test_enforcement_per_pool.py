"""Each pool is enforced apart (issue 12 item 4): before, two pools' flavors sharing nvidia.com/gpu
were summed into one ResourceQuota; publishing each pool's policy gives it a resource name of its
own, the flavors follow once the pool's nodes have converged on it (issue 27), and the namespace's
ResourceQuota in kubesim holds each pool separately."""

from __future__ import annotations

from decimal import Decimal

import kubernetes
import pytest

from gpuplatform.audit.models import AuditEvent
from inventory.services import create_cluster
from policies.models import NodePolicyState, Rollout
from policies.services.revisions import publish_policy
from policies.services.rollouts import advance_rollout, start_rollout
from policies.services.sharing import set_sharing_policy
from quotas.materialise import QUOTA_NAME, materialise_request
from quotas.models import CapacityRequest, Flavor, PriorityClass, Queue, Quota
from tests.policies.factories import h100_pool

pytestmark = pytest.mark.django_db

GPU = "nvidia.com/gpu"


@pytest.fixture
def two_pools(cast, kubesim):
    """Cluster "sim" (kubesim) with an H100 pool and a T4 pool whose flavors both use nvidia.com/gpu;
    vision holds 2 H100s and 8 T4 time-slices."""
    cluster = create_cluster(actor=cast.pat, name="sim", kubeconfig=kubesim.kubeconfig_path.read_text())
    core = kubernetes.client.CoreV1Api(kubesim.api_client())
    for namespace in ("team-vision", "team-nlp"):
        core.create_namespace(
            kubernetes.client.V1Namespace(metadata=kubernetes.client.V1ObjectMeta(name=namespace))
        )
    h100 = h100_pool("h100", cluster=cluster)
    t4 = h100_pool("t4", cluster=cluster, nodes=1)
    flavors = {
        "h100": Flavor.objects.create(name="h100", pool=h100, resources=[{"name": GPU, "ge_per_unit": "1"}]),
        "t4-shared": Flavor.objects.create(
            name="t4-shared", pool=t4, resources=[{"name": GPU, "ge_per_unit": "1/4"}]
        ),
    }
    batch = PriorityClass.objects.create(name="batch", value=100)
    queue = Queue.objects.create(tenant=cast.vision, name="default")
    requests = []
    for name, amount in (("h100", 2), ("t4-shared", 8)):
        Quota.objects.create(tenant=cast.vision, flavor=flavors[name], resource=GPU, nominal=amount)
        requests.append(
            CapacityRequest.objects.create(
                tenant=cast.vision,
                queue=queue,
                flavor=flavors[name],
                priority_class=batch,
                amounts={GPU: amount},
                ge=Decimal(amount),
                state="active",
            )
        )
    return core, h100, t4, requests


def hard(core, namespace="team-vision"):
    return core.read_namespaced_resource_quota(QUOTA_NAME, namespace).spec.hard


def converge(cast, pool, revision) -> None:
    """Roll the revision out over every node at once, each node's agent acking it."""
    rollout = start_rollout(actor=cast.pat, pool_id=pool.pk, revision_id=revision.pk, max_unavailable=99)
    advance_rollout(rollout_id=rollout.pk)
    NodePolicyState.objects.filter(rollout=rollout).update(
        state="applied", applied_revision=revision.number, applied_hash=revision.content_hash
    )
    advance_rollout(rollout_id=rollout.pk)
    assert Rollout.objects.get(pk=rollout.pk).state == "succeeded"


def test_before_the_pools_have_names_of_their_own_their_flavors_are_summed(two_pools):
    core, _, _, requests = two_pools
    materialise_request(request_id=requests[0].pk)
    assert hard(core) == {f"requests.{GPU}": "10"}  # the defect: 2 H100 + 8 T4 slices, spendable on either


def test_publishing_each_pools_policy_holds_each_pool_apart_in_the_resource_quota(cast, api, two_pools):
    core, h100, t4, requests = two_pools
    set_sharing_policy(pool_id=h100.pk, actor=cast.pat, mode="exclusive", parameters={})
    set_sharing_policy(pool_id=t4.pk, actor=cast.pat, mode="time-slicing", parameters={"replicas": 4})
    for pool in (h100, t4):
        revision = publish_policy(pool_id=pool.pk, actor=cast.pat, confirm_no_agent=True)
        assert Flavor.objects.filter(pool=pool).get().resource_names == [GPU]  # not before the nodes
        converge(cast, pool, revision)

    assert Flavor.objects.get(name="h100").resource_names == ["nvidia.com/gpu-h100"]
    assert Flavor.objects.get(name="t4-shared").resource_names == ["nvidia.com/gpu-t4"]
    assert sorted(Quota.objects.values_list("resource", "nominal")) == [
        ("nvidia.com/gpu-h100", 2),
        ("nvidia.com/gpu-t4", 8),
    ]
    assert [r.amounts for r in CapacityRequest.objects.order_by("ge")] == [
        {"nvidia.com/gpu-h100": 2},
        {"nvidia.com/gpu-t4": 8},
    ]
    for request in requests:
        materialise_request(request_id=request.pk)
    # each pool on its own line; plain nvidia.com/gpu (still advertised until agents apply) is 0
    assert hard(core) == {
        "requests.nvidia.com/gpu": "0",
        "requests.nvidia.com/gpu-h100": "2",
        "requests.nvidia.com/gpu-t4": "8",
    }
    # nlp holds nothing on either pool: its namespace is held to 0 on both, not left unlimited
    nlp_queue = Queue.objects.create(tenant=cast.nlp, name="default")
    nlp = CapacityRequest.objects.create(
        tenant=cast.nlp,
        queue=nlp_queue,
        flavor=Flavor.objects.get(name="h100"),
        priority_class=requests[0].priority_class,
        amounts={"nvidia.com/gpu-h100": 1},
        state="released",
    )
    materialise_request(request_id=nlp.pk)
    assert hard(core, "team-nlp") == {
        "requests.nvidia.com/gpu": "0",
        "requests.nvidia.com/gpu-h100": "0",
        "requests.nvidia.com/gpu-t4": "0",
    }
    enforcement = {
        f["name"]: f["enforcement"] for f in api(cast.alice).get("/api/v1/flavors/").json()["results"]
    }
    assert enforcement["h100"]["separately"] is True and enforcement["t4-shared"]["separately"] is True
    renamed = AuditEvent.objects.filter(action="flavor.resources_renamed").order_by("at")
    assert [e.after["renamed"] for e in renamed] == [
        {GPU: "nvidia.com/gpu-h100"},
        {GPU: "nvidia.com/gpu-t4"},
    ]
