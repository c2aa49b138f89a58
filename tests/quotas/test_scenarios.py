"""Scenarios over kubesim: requests decided through the API, materialised by calling the task, and
the cluster objects read back through the official client."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import kubernetes
import pytest
from django.utils import timezone

from gpuplatform.audit.models import AuditEvent
from inventory.kube import KubeError
from inventory.models import NodePool
from inventory.services import create_cluster
from inventory.sync.service import sync_cluster
from quotas.materialise import QUOTA_NAME, claim_name
from quotas.models import Budget, CapacityRequest, Flavor, PriorityClass, Queue, Quota
from quotas.tasks import materialise_request_task, materialise_requests_task, run_admission_loop_task
from tests.helpers import assert_problem

pytestmark = pytest.mark.django_db

URL = "/api/v1/capacity-requests/"
GPU = "nvidia.com/gpu"


@pytest.fixture
def fleet(cast, kubesim_factory):
    """kubesim's mixed scenario synced as cluster "sim"; an H100 flavor (16 whole GPUs) and a DRA
    flavor on the same pool; vision and nlp hold 4 GPUs each under research."""
    sim = kubesim_factory(scenario="mixed", nodes=20, seed=1)
    cluster = create_cluster(actor=cast.pat, name="sim", kubeconfig=sim.kubeconfig_path.read_text())
    sync_cluster(cluster_id=str(cluster.pk))
    pool = NodePool.objects.get(cluster=cluster, name="NVIDIA-H100-80GB-HBM3")
    h100 = Flavor.objects.create(
        name="h100", pool=pool, gpu_model="H100-80GB", resources=[{"name": GPU, "ge_per_unit": "1"}]
    )
    dra = Flavor.objects.create(
        name="h100-dra",
        kind="dra",
        pool=pool,
        device_class="gpu.nvidia.com",
        resources=[{"name": "gpu.nvidia.com", "ge_per_unit": "1"}],
    )
    PriorityClass.objects.create(name="batch", value=100)
    PriorityClass.objects.create(name="prod", value=1000, preemptible=False)
    for team in (cast.vision, cast.nlp):
        Queue.objects.create(tenant=team, name="default")
        Quota.objects.create(tenant=team, flavor=h100, resource=GPU, nominal=4)
    Quota.objects.create(tenant=cast.vision, flavor=dra, resource="gpu.nvidia.com", nominal=2)
    core = kubernetes.client.CoreV1Api(sim.api_client())
    resource = kubernetes.client.ResourceV1Api(sim.api_client())
    return sim, core, resource, h100


def submit(client, **body):
    response = client.post(URL, {"flavor": "h100", "priority_class": "batch", **body}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def materialise_all():
    for pk in CapacityRequest.objects.values_list("pk", flat=True):
        materialise_request_task(str(pk))


def hard_limit(core, namespace):
    return core.read_namespaced_resource_quota(QUOTA_NAME, namespace).spec.hard


def test_within_nominal_it_admits_at_once_and_the_cluster_enforces_it(cast, api, fleet):
    _, core, resource, _ = fleet
    gpus = submit(api(cast.alice), tenant="vision", amount=2)
    claim = submit(api(cast.alice), tenant="vision", flavor="h100-dra", amount=1)
    assert gpus["state"] == claim["state"] == "admitted"
    materialise_all()
    assert hard_limit(core, "team-vision") == {f"requests.{GPU}": "2"}
    read = resource.read_namespaced_resource_claim(
        claim_name(CapacityRequest.objects.get(pk=claim["id"]).pk), "team-vision"
    )
    assert read.spec.devices.requests[0].exactly.count == 1
    assert read.metadata.managed_fields[0].manager == "gpuplatform"
    assert CapacityRequest.objects.get(pk=gpus["id"]).state == "active"
    materialise_all()  # idempotent: nothing changes the second time
    assert hard_limit(core, "team-vision") == {f"requests.{GPU}": "2"}


def test_over_nominal_borrows_then_the_lender_reclaims_by_preemption(cast, api, fleet):
    _, core, _, _ = fleet
    alice, bob = api(cast.alice), api(cast.bob)
    own = submit(alice, tenant="vision", amount=4)
    borrowed = submit(alice, tenant="vision", amount=2)
    assert (own["reason_code"], borrowed["reason_code"]) == ("admit", "borrow")
    materialise_all()
    assert hard_limit(core, "team-vision") == {f"requests.{GPU}": "6"}
    # nlp asks for its own nominal 4: only 2 are left in the tree, so vision's loan is reclaimed
    reclaim = submit(bob, tenant="nlp", amount=4)
    assert reclaim["state"] == "admitted" and reclaim["reason_code"] == "preempt"
    materialise_all()
    assert hard_limit(core, "team-vision") == {f"requests.{GPU}": "4"}
    assert hard_limit(core, "team-nlp") == {f"requests.{GPU}": "4"}
    victim = alice.get(f"{URL}{borrowed['id']}/").json()
    # vision sees why, not nlp's request (another tenant's); a platform-admin sees which
    assert victim["state"] == "preempted" and victim["preempted_by"] is None
    assert api(cast.pat).get(f"{URL}{borrowed['id']}/").json()["preempted_by"] == reclaim["id"]
    assert "reclaiming its nominal quota" in victim["message"]
    assert f"ResourceQuota team-vision/{QUOTA_NAME} set to requests.{GPU}=4" in victim["message"]
    assert alice.get(f"{URL}{own['id']}/").json()["state"] == "active"


def this_month_end(now):
    """00:00 UTC on the first of the next month: the end of the billing month (BILLING_TIMEZONE=UTC)."""
    return (now.replace(day=1, hour=0, minute=0, second=0, microsecond=0) + dt.timedelta(days=32)).replace(
        day=1
    )


def test_a_hard_budget_blocks_admission(cast, api, fleet, time_machine):
    # given: the 15th of this month at noon (far from its end), a hard budget of 10 GE-hours
    time_machine.move_to(timezone.now().replace(day=15, hour=12, minute=0, second=0, microsecond=0))
    Budget.objects.create(tenant=cast.vision, limit_ge_hours=Decimal(10), hard=True)
    # when: 1 GPU for 24 h, all of it in this month: 24 GE-hours > 10
    body = submit(api(cast.alice), tenant="vision", amount=1, duration_seconds=24 * 3600)
    # then
    assert body["state"] == "pending" and body["reason_code"] == "over_budget"
    assert "monthly budget" in body["message"]


def test_in_the_months_last_hours_a_budget_counts_only_the_hours_left_in_it(cast, api, fleet, time_machine):
    # given: 20:00 UTC on the month's last day, 4 hours before it ends; a hard budget of 10 GE-hours
    time_machine.move_to(this_month_end(timezone.now()) - dt.timedelta(hours=4))
    Budget.objects.create(tenant=cast.vision, limit_ge_hours=Decimal(10), hard=True)
    alice = api(cast.alice)
    # when / then: 2 GPUs for 24 h count 2 x 4 = 8 GE-hours against this month: admitted
    assert submit(alice, tenant="vision", amount=2, duration_seconds=24 * 3600)["state"] == "admitted"
    # 1 more for 24 h counts 4: 8 + 4 = 12 > 10, it waits for the budget
    over = submit(alice, tenant="vision", amount=1, duration_seconds=24 * 3600)
    assert (over["state"], over["reason_code"]) == ("pending", "over_budget")


def test_a_large_request_waits_for_approval_by_an_admin_above(cast, api, fleet):
    _, core, _, h100 = fleet
    Flavor.objects.filter(pk=h100.pk).update(approval_above=2)
    body = submit(api(cast.dana), tenant="vision", amount=3)
    assert body["state"] == "pending" and body["reason_code"] == "awaiting_approval"
    assert_problem(
        api(cast.dana).post(f"{URL}{body['id']}/approve/", {}, format="json"), 403, "permission_denied"
    )
    approved = (
        api(cast.rita).post(f"{URL}{body['id']}/approve/", {"note": "ok for the demo"}, format="json").json()
    )
    assert approved["state"] == "admitted" and approved["approval"] == "approved"
    event = AuditEvent.objects.get(action="capacity_request.approved")
    assert event.actor == cast.rita and event.after["note"] == "ok for the demo"
    materialise_all()
    assert hard_limit(core, "team-vision") == {f"requests.{GPU}": "3"}
    other = submit(api(cast.dana), tenant="vision", amount=3)
    rejected = api(cast.alice).post(f"{URL}{other['id']}/reject/", {"note": "too big"}, format="json").json()
    assert rejected["state"] == "rejected" and "too big" in rejected["message"]


def test_release_admits_the_next_pending_in_priority_then_fifo_order(cast, api, fleet):
    _, core, _, _ = fleet
    Quota.objects.filter(tenant=cast.nlp).update(nominal=0)  # the tree holds exactly vision's 4
    alice = api(cast.alice)
    holder = submit(alice, tenant="vision", amount=4, priority_class="prod")  # not preemptible
    first_batch = submit(alice, tenant="vision", amount=2)
    second_batch = submit(alice, tenant="vision", amount=2)
    urgent = submit(alice, tenant="vision", amount=2, priority_class="prod")
    assert {first_batch["state"], second_batch["state"], urgent["state"]} == {"pending"}
    run_admission_loop_task()  # refreshes every position: the urgent one is now first in line
    positions = {r["id"]: r["queue_position"] for r in alice.get(URL + "?state=pending").json()["results"]}
    assert positions == {urgent["id"]: 1, first_batch["id"]: 2, second_batch["id"]: 3}
    released = alice.post(f"{URL}{holder['id']}/release/", {}, format="json").json()
    assert released["state"] == "released"
    states = {
        k: CapacityRequest.objects.get(pk=v["id"]).state
        for k, v in {"urgent": urgent, "first": first_batch, "second": second_batch}.items()
    }
    assert states == {"urgent": "admitted", "first": "admitted", "second": "pending"}
    materialise_all()
    assert hard_limit(core, "team-vision") == {f"requests.{GPU}": "4"}


def test_one_message_materialises_every_request_a_decision_moved_and_a_failure_spares_the_others(
    cast, api, fleet
):
    sim, core, resource, _ = fleet
    gpus = submit(api(cast.alice), tenant="vision", amount=2)
    claim = submit(api(cast.alice), tenant="vision", flavor="h100-dra", amount=1)
    # the API server refuses every write to ResourceQuotas for now
    refusal = sim.faults.add(
        "error", verbs=["patch", "create", "update"], resources="resourcequotas", status=503
    )
    with pytest.raises(KubeError, match="503"):
        materialise_requests_task([gpus["id"], claim["id"]])
    # the claim was applied all the same; the quota request waits for the retry
    assert CapacityRequest.objects.get(pk=claim["id"]).state == "active"
    assert CapacityRequest.objects.get(pk=gpus["id"]).state == "admitted"
    sim.faults.remove(refusal.id)
    materialise_requests_task([gpus["id"], claim["id"]])  # the retry: the applied one is left as it is
    assert CapacityRequest.objects.get(pk=gpus["id"]).state == "active"
    assert hard_limit(core, "team-vision") == {f"requests.{GPU}": "2"}
    ours = resource.read_namespaced_resource_claim(
        claim_name(CapacityRequest.objects.get(pk=claim["id"]).pk), "team-vision"
    )
    assert ours.metadata.managed_fields[0].manager == "gpuplatform"
