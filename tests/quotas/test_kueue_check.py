"""gpuplatform as the controller of its Kueue AdmissionCheck `gpuplatform-budget` (issue 28, item 5),
end to end on kubesim with Kueue v0.19.2's CRDs and its Kueue stand-in: a Job within budget is
admitted; one over its budget is held (Retry: Kueue releases its quota and requeues it) with the
reason, and passes once the budget is raised; one over the flavor's approval threshold waits
("awaiting approval by ...") until an admin above its tenant approves it on its page; a rejection
deactivates it; deciding twice never reserves twice; the reservation ends when the Workload does.

Cast: acme -> research -> vision (alice), nlp (bob); rita administers research. vision and nlp each
hold 4 H100 (1 GE each) nominal. Our side of the clock is fixed (NOW), so the GE-hours are exact."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
import time_machine

from gpuplatform.audit.models import AuditEvent
from inventory.models import Workload
from inventory.ports import kueue_check_pending
from inventory.services import update_cluster
from inventory.sync.service import sync_cluster
from quotas.kueue_check.service import check_kueue_workloads
from quotas.models import Budget, Flavor, WorkloadCheck
from quotas.runner.inputs import reserved_by_workloads
from quotas.services.catalogue import create_entry, update_entry
from quotas.services.requests import submit_request
from quotas.tasks import apply_kueue_task
from tests.quotas import factories as adm
from tests.quotas.conftest import make_catalog
from tests.quotas.test_kueue_apply import conditions, gpu_job, kueue, sim_cluster  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)

NOW = datetime(2026, 11, 10, 12, 0, tzinfo=UTC)  # mid-month: every reservation fits in the month
MAX_EXEC = "kueue.x-k8s.io/max-exec-time-seconds"


def job(name: str, *, gpus: int, seconds: int) -> dict[str, Any]:
    body = gpu_job(name, gpus=gpus)
    body["metadata"]["labels"][MAX_EXEC] = str(seconds)
    return body


def check_of(sim: Any, namespace: str, name: str) -> tuple[str, str]:
    (workload,) = [w for w in sim.workloads(namespace) if w["metadata"]["name"].startswith(f"job-{name}-")]
    entry = next(c for c in workload["status"]["admissionChecks"] if c["name"] == "gpuplatform-budget")
    return entry["state"], entry["message"]


def admitted(sim: Any, namespace: str, name: str) -> bool:
    (workload,) = [w for w in sim.workloads(namespace) if w["metadata"]["name"].startswith(f"job-{name}-")]
    return conditions(workload).get("Admitted", ("False", ""))[0] == "True"


class Loop:
    """What the workers do, one step at a time: Kueue acts, the sync lists, the check decides."""

    def __init__(self, sim: Any, cluster: Any) -> None:
        self.kueue, self.cluster = sim, cluster

    def run(self) -> dict[str, Any]:
        self.kueue.settle()
        sync_cluster(cluster_id=str(self.cluster.pk))
        result = check_kueue_workloads(cluster_id=str(self.cluster.pk), now=lambda: NOW)
        self.kueue.settle()
        sync_cluster(cluster_id=str(self.cluster.pk))
        return result


@pytest.fixture
def loop(cast, kueue, sim_cluster):  # noqa: F811 (the fixtures imported above)
    update_cluster(actor=cast.pat, cluster_id=sim_cluster.pk, enforcement_backend="kueue")
    apply_kueue_task(str(sim_cluster.pk))
    kueue.settle()
    return Loop(kueue, sim_cluster)


def test_a_job_within_budget_is_admitted_one_over_is_held_and_passes_once_the_budget_is_raised(
    cast,
    client,
    kueue,  # noqa: F811 (the fixture imported above)
    loop,
):
    h100 = Flavor.objects.get(name="h100")
    # given vision's hard monthly budget of 100 GE-h on h100
    budget = create_entry(actor=cast.pat, model=Budget, tenant=cast.vision, flavor=h100, limit_ge_hours=100)
    # when alice's team submits "train": 1 pod x 2 H100 for at most 36000 s = 10 h
    kueue.batch.create_namespaced_job("team-vision", job("train", gpus=2, seconds=36_000))
    result = loop.run()
    # then it commits 2 GE x 10 h = 20 GE-h <= 100: Ready, and Kueue admits it in ClusterQueue vision
    assert list(result["decided"].values()) == ["Ready"]
    assert check_of(kueue, "team-vision", "train") == (
        "Ready",
        "Within budget: 20 GE-h reserved (2 GE x 10 h).",
    )
    assert admitted(kueue, "team-vision", "train")
    train = WorkloadCheck.objects.get(workload__name__startswith="job-train-")
    assert train.ge_hours == Decimal(20) and train.holds_reservation
    # and the reservation counts against vision's budget and every one above (research, acme)
    reserved = reserved_by_workloads(
        tenant_ids=[cast.vision.pk, cast.research.pk, cast.acme.pk, cast.nlp.pk],
        now=NOW,
        month_end=datetime(2026, 12, 1, tzinfo=UTC),
    )
    assert reserved[cast.vision.pk][h100.pk] == reserved[cast.acme.pk][h100.pk] == 20
    assert cast.nlp.pk not in reserved

    # when "sweep" asks 1 pod x 2 H100 for 180000 s = 50 h: 2 x 50 = 100 GE-h, and 20 + 100 = 120 > 100
    kueue.batch.create_namespaced_job("team-vision", job("sweep", gpus=2, seconds=180_000))
    loop.run()
    # then gpuplatform's check says Retry with the engine's reason and when it may pass; Kueue evicts
    # it (its quota released) and queues it again
    state, message = check_of(kueue, "team-vision", "sweep")
    assert not admitted(kueue, "team-vision", "sweep")
    sweep = WorkloadCheck.objects.get(workload__name__startswith="job-sweep-")
    assert (sweep.verdict, sweep.code, sweep.reserved_at) == ("Retry", "over_budget", None)
    assert sweep.message.startswith(
        "Over budget: 100 GE-h expected + 20 GE-h burned or committed exceeds the 100 GE-h monthly "
        "budget of 'vision' (flavor 'h100'). It may pass once a budget above it is raised"
    )
    assert "budgets start afresh on 2026-12-01" in sweep.message
    # (Kueue put the check back to Pending when it requeued; its last word is kept on the Workload)
    assert state == "Pending" and "Previously: Retry" in message
    # and the team reads why on the queue page
    client.force_login(cast.alice)
    page = client.get(f"/queues/workloads/{sweep.pk}/").content.decode()
    assert "Over budget: 100 GE-h expected + 20 GE-h" in page
    assert AuditEvent.objects.filter(action="kueue_workload.over_budget", object_id=str(sweep.pk)).exists()

    # when a platform-admin raises the budget to 200 GE-h: 20 + 100 = 120 <= 200
    update_entry(actor=cast.pat, model=Budget, pk=budget.pk, limit_ge_hours=200)
    loop.run()
    # then it passes on the next pass and Kueue admits it
    assert check_of(kueue, "team-vision", "sweep")[0] == "Ready"
    assert admitted(kueue, "team-vision", "sweep")
    # and running the check again reserves nothing twice: still 20 + 100 GE-h for vision
    check_kueue_workloads(cluster_id=str(loop.cluster.pk), now=lambda: NOW)
    reserved = reserved_by_workloads(
        tenant_ids=[cast.vision.pk], now=NOW, month_end=datetime(2026, 12, 1, tzinfo=UTC)
    )
    assert reserved[cast.vision.pk][h100.pk] == 120
    assert AuditEvent.objects.filter(action="kueue_workload.reserved").count() == 2


def test_a_job_over_the_approval_threshold_waits_until_an_admin_above_approves_it_in_the_ui(
    cast,
    client,
    kueue,  # noqa: F811 (the fixture imported above)
    loop,
):
    # given approval is needed above 3 H100 on h100
    h100 = Flavor.objects.get(name="h100")
    update_entry(actor=cast.pat, model=Flavor, pk=h100.pk, approval_above=3)
    apply_kueue_task(str(loop.cluster.pk))
    # and the sync announces a Workload waiting on gpuplatform (the port quotas listens on)
    announced: list[str] = []

    def heard(**kwargs: Any) -> None:
        announced.append(kwargs["cluster_id"])

    kueue_check_pending.connect(heard, dispatch_uid="test-heard")
    try:
        # when nlp submits "big": 1 pod x 4 H100 for 3600 s: 4 GE x 1 h = 4 GE-h, 4 H100 > 3
        kueue.batch.create_namespaced_job("team-nlp", job("big", gpus=4, seconds=3600))
        loop.run()
    finally:
        kueue_check_pending.disconnect(dispatch_uid="test-heard")
    assert str(loop.cluster.pk) in announced
    # then it waits, its quota held, Pending "awaiting approval by" the admins above nlp
    state, message = check_of(kueue, "team-nlp", "big")
    assert state == "Pending"
    assert message.startswith(
        "awaiting approval by a tenant-admin of research or acme (above nlp) or a platform-admin: "
        "4 GE for 1 h"
    )
    assert not admitted(kueue, "team-nlp", "big")
    big = WorkloadCheck.objects.get(workload__name__startswith="job-big-")
    assert big.approval_basis == [
        {"flavor": "h100", "threshold": 3, "resource": "nvidia.com/gpu", "requested": 4}
    ]
    # and another pass does not tell the cluster again (no new transition)
    assert check_kueue_workloads(cluster_id=str(loop.cluster.pk), now=lambda: NOW)["decided"] == {
        Workload.objects.get(pk=big.workload_id).__str__(): "Pending"
    }

    # when bob (nlp's own admin) opens the inbox: it is there, but he may only reject
    client.force_login(cast.bob)
    inbox = client.get("/queues/").content.decode()
    assert 'data-testid="workload-inbox"' in inbox and f"/queues/workloads/{big.pk}/" in inbox
    page = client.get(f"/queues/workloads/{big.pk}/").content.decode()
    assert ">Approve</button>" not in page and ">Reject</button>" in page
    # and posting an approval anyway is refused, and changes nothing
    refused = client.post(f"/queues/workloads/{big.pk}/approve/", {"note": "mine"}, follow=True)
    assert "Only a tenant-admin above this tenant" in refused.content.decode()
    big.refresh_from_db()
    assert big.approval == "awaiting"
    # and alice (vision's admin) does not see nlp's workload at all
    client.force_login(cast.alice)
    assert client.get(f"/queues/workloads/{big.pk}/").status_code == 404
    assert client.post(f"/queues/workloads/{big.pk}/approve/", {"note": "x"}).status_code == 404

    # when rita, admin of research (above nlp), approves it with a note on its page's form
    client.force_login(cast.rita)
    page = client.get(f"/queues/workloads/{big.pk}/").content.decode()
    assert ">Approve</button>" in page and "awaiting approval by" in page
    done = client.post(f"/queues/workloads/{big.pk}/approve/", {"note": "quarter-end run"}, follow=True)
    assert "Approved, with your note." in done.content.decode()
    # then the next pass lets it through: Ready, and Kueue admits it
    loop.run()
    assert check_of(kueue, "team-nlp", "big")[0] == "Ready"
    assert admitted(kueue, "team-nlp", "big")
    big.refresh_from_db()
    assert (big.approval, big.approved_by, big.approval_note) == ("approved", cast.rita, "quarter-end run")
    assert big.ge_hours == 4 and big.holds_reservation
    event = AuditEvent.objects.get(action="kueue_workload.approved")
    assert event.actor == cast.rita and event.after["note"] == "quarter-end run"


def test_a_rejection_deactivates_the_workload_and_the_reservation_ends_with_the_workload(
    cast,
    client,
    kueue,  # noqa: F811 (the fixture imported above)
    loop,
):
    h100 = Flavor.objects.get(name="h100")
    update_entry(actor=cast.pat, model=Flavor, pk=h100.pk, approval_above=3)
    apply_kueue_task(str(loop.cluster.pk))
    kueue.batch.create_namespaced_job("team-nlp", job("big", gpus=4, seconds=3600))
    kueue.batch.create_namespaced_job("team-vision", job("small", gpus=1, seconds=7200))
    loop.run()
    big = WorkloadCheck.objects.get(workload__name__startswith="job-big-")
    # when bob rejects nlp's big job with a note (any admin of the tenant may refuse)
    client.force_login(cast.bob)
    client.post(f"/queues/workloads/{big.pk}/reject/", {"note": "too big for this week"})
    loop.run()
    # then gpuplatform's check says Rejected and Kueue deactivates it
    (workload,) = kueue.workloads("team-nlp")
    assert workload["spec"]["active"] is False
    big.refresh_from_db()
    assert (big.verdict, big.message) == ("Rejected", "Rejected by bob: too big for this week")
    # and when vision's small job (1 GE x 2 h = 2 GE-h reserved) is deleted, its reservation ends
    small = WorkloadCheck.objects.get(workload__name__startswith="job-small-")
    assert small.holds_reservation and small.ge_hours == 2
    kueue.batch.delete_namespaced_job(
        next(j.metadata.name for j in kueue.batch.list_namespaced_job("team-vision").items),
        "team-vision",
        propagation_policy="Foreground",
    )
    loop.run()
    small.refresh_from_db()
    assert small.released_at is not None
    assert (
        reserved_by_workloads(
            tenant_ids=[cast.vision.pk], now=NOW, month_end=datetime(2026, 12, 1, tzinfo=UTC)
        )
        == {}
    )


def test_the_api_approves_only_from_above_refuses_bad_input_and_hides_other_tenants(cast, api):
    # given nlp's Workload awaiting approval (its governing tenant is nlp: admins above are rita's
    # research and acme's, and platform-admins)
    held = adm.workload_check(tenant=cast.nlp, namespace="team-nlp")
    url = f"/api/v1/workload-checks/{held.pk}/"
    # alice (vision) cannot see it at all
    assert api(cast.alice).get(url).status_code == 404
    assert api(cast.alice).post(url + "approve/", {"note": "x"}, format="json").status_code == 404
    # bob, nlp's own admin, may not approve it
    refused = api(cast.bob).post(url + "approve/", {"note": "mine"}, format="json")
    assert (refused.status_code, refused.json()["code"]) == (403, "approver_not_above")
    # a note too long is a problem, and changes nothing
    too_long = api(cast.rita).post(url + "approve/", {"note": "n" * 501}, format="json")
    assert too_long.status_code == 400 and too_long["Content-Type"] == "application/problem+json"
    held.refresh_from_db()
    assert (
        held.approval == "awaiting"
        and not AuditEvent.objects.filter(action__startswith="kueue_workload.").exists()
    )
    # rita approves it
    done = api(cast.rita).post(url + "approve/", {"note": "fine"}, format="json")
    assert done.status_code == 200
    assert (done.json()["approval"], done.json()["approved_by"], done.json()["approval_note"]) == (
        "approved",
        "rita",
        "fine",
    )
    # and deciding again is refused: it no longer awaits approval
    again = api(cast.pat).post(url + "reject/", {"note": "late"}, format="json")
    assert again.status_code == 400
    assert [c["name"] for c in api(cast.bob).get("/api/v1/workload-checks/").json()["results"]] == [
        "job-train-1a2b3"
    ]


def test_a_capacity_request_sees_the_ge_hours_a_workload_reserved(cast):
    # given vision's hard 100 GE-h budget on h100, and a Workload of vision's that gpuplatform's check
    # let through with 2 GE for 40 h: 2 x 40 = 80 GE-h reserved
    with time_machine.travel(NOW, tick=False):
        catalog = make_catalog(cast)
        create_entry(
            actor=cast.pat, model=Budget, tenant=cast.vision, flavor=catalog.flavor, limit_ge_hours=100
        )
        check = adm.workload_check(tenant=cast.vision, namespace="team-vision")
        check.verdict, check.ge_by_flavor = "Ready", {str(catalog.flavor.pk): "2"}
        check.reserved_at, check.reserved_until = NOW, NOW + timedelta(hours=40)
        check.save()
        # when alice asks 1 H100 for 30 h: 30 + 80 = 110 > 100
        asked = submit_request(
            actor=cast.alice, tenant="vision", flavor="h100", amount=1, duration_seconds=30 * 3600
        ).request
        # then it waits over budget, the Workload's 80 GE-h counted as committed
        assert (asked.state, asked.reason_code) == ("pending", "over_budget")
        assert asked.message.startswith(
            "30 GE-h expected + 80 GE-h burned or committed exceeds the 100 GE-h monthly budget of 'vision'"
        )
        # and once the Workload's reservation is released, 1 H100 for 10 h fits: 10 <= 100
        WorkloadCheck.objects.filter(pk=check.pk).update(released_at=NOW)
        again = submit_request(
            actor=cast.alice, tenant="vision", flavor="h100", amount=1, duration_seconds=10 * 3600
        ).request
        assert again.state == "admitted"
