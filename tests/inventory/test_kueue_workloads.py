"""Kueue's Workloads synced into the inventory from a kueue cluster, list then watch, as pods are
(issue 28, item 4): the tenant through its LocalQueue's namespace, the flavor assigned, priority,
state and Kueue's own reasons, explained in plain words on the queue page and the tenant's API; a
Workload naming a LocalQueue gpuplatform does not manage is kept unattributed, seen by platform staff
only. End to end on kubesim with Kueue's CRDs and its Kueue stand-in."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from inventory.domain.kueue_workloads import parse_workload, plain_reason
from inventory.models import SyncState, Workload
from inventory.services import update_cluster
from inventory.sync.runner import ClusterSync, kinds_for
from inventory.sync.service import sync_cluster
from quotas.tasks import apply_kueue_task
from tests.inventory import factories as inv
from tests.quotas.test_kueue_apply import gpu_job, kueue, sim_cluster  # noqa: F401 (fixtures)

GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"


def _watch(syncer: ClusterSync) -> None:
    try:
        syncer.run(resync_seconds=3600)
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_workloads_are_listed_then_watched_with_their_tenant_flavor_and_plain_reasons(
    cast,
    api,
    client,
    kueue,  # noqa: F811 (the fixtures imported above)
    sim_cluster,  # noqa: F811 (the fixtures imported above)
):
    # given a kueue cluster with the compiled objects, a Job of vision's taking quota, and a Workload
    # in nlp's namespace naming a LocalQueue that gpuplatform did not write
    update_cluster(actor=cast.pat, cluster_id=sim_cluster.pk, enforcement_backend="kueue")
    apply_kueue_task(str(sim_cluster.pk))
    kueue.settle()
    kueue.batch.create_namespaced_job("team-vision", gpu_job("train", gpus=2))
    rogue = gpu_job("side-job", gpus=1)
    rogue["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "side-door"
    kueue.batch.create_namespaced_job("team-nlp", rogue)
    kueue.settle()
    # when the inventory lists the cluster
    sync_cluster(cluster_id=str(sim_cluster.pk))
    # then both Workloads are there, vision's attributed and waiting on gpuplatform's check
    assert SyncState.objects.get(cluster=sim_cluster, kind="workloads").objects_seen == 2
    ours = Workload.objects.get(namespace="team-vision")
    assert (ours.tenant, ours.queue_name, ours.cluster_queue) == (cast.vision, "default", "vision")
    assert ours.state == "quota_reserved" and ours.flavors == {"main": {"nvidia.com/gpu": "h100"}}
    assert ours.pod_sets == [{"name": "main", "count": 1, "requests": {"nvidia.com/gpu": "2"}}]
    assert ours.admission_checks[0]["name"] == "gpuplatform-budget"
    assert ours.explanation.startswith("Quota reserved in ClusterQueue vision; waiting for gpuplatform")
    side = Workload.objects.get(namespace="team-nlp")
    assert side.tenant is None and side.state == "pending" and side.reason == "Inadmissible"
    assert side.explanation.startswith("Unattributed: LocalQueue 'side-door' in namespace 'team-nlp'")
    assert "LocalQueue side-door doesn't exist" in side.explanation

    # and the tenant's API shows vision's to alice, not the unattributed one; pat sees both
    mine = api(cast.alice).get("/api/v1/workloads/").json()["results"]
    assert [(w["tenant"], w["namespace"], w["state"]) for w in mine] == [
        ("vision", "team-vision", "quota_reserved")
    ]
    assert mine[0]["explanation"] == ours.explanation and mine[0]["reason"] == "QuotaReserved"
    every = api(cast.pat).get("/api/v1/workloads/", {"tenant": "unattributed"}).json()["results"]
    assert [w["namespace"] for w in every] == ["team-nlp"]
    assert api(cast.bob).get(f"/api/v1/workloads/{ours.pk}/").status_code == 404
    # and the queue page says where it stands
    client.force_login(cast.alice)
    page = client.get("/queues/").content.decode()
    assert "Kueue workloads" in page and "team-vision/" in page and "waiting for gpuplatform" in page
    assert "side-job" not in page

    # when the sync watches and someone deactivates vision's Workload, the change arrives by the watch
    sim_cluster.refresh_from_db()
    syncer = ClusterSync(sim_cluster)
    thread = threading.Thread(target=_watch, args=(syncer,), daemon=True)
    thread.start()
    try:
        _wait(lambda: "workloads" in syncer.versions)  # listed: the watch starts from that version
        kueue.custom.patch_namespaced_custom_object(
            GROUP, VERSION, "team-vision", "workloads", ours.name, {"spec": {"active": False}},
            _content_type="application/merge-patch+json",
        )  # fmt: skip
        kueue.settle()
        _wait(lambda: Workload.objects.get(pk=ours.pk).state == "evicted")
    finally:
        syncer.stop_event.set()
        kueue.sim.store.close_watches()
        thread.join(timeout=15)
    ours.refresh_from_db()
    assert (ours.active, ours.reason) == (False, "Deactivated")
    assert ours.explanation.startswith("Rejected and deactivated:")


def _wait(predicate, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError("not reached in time")


@pytest.mark.django_db
def test_only_kueue_clusters_sync_workloads(cast):
    cluster = inv.cluster()
    assert "workloads" not in kinds_for(cluster)
    cluster.enforcement_backend = "kueue"
    assert kinds_for(cluster)[-1] == "workloads"


def _workload(conditions, checks=(), **spec):
    return {
        "metadata": {"uid": "u1", "namespace": "team-vision", "name": "job-train-abcde"},
        "spec": {"queueName": "default", **spec},
        "status": {
            "conditions": [{"type": t, "status": s, "reason": r, "message": m} for t, s, r, m in conditions],
            "admissionChecks": [{"name": n, "state": st, "message": msg} for n, st, msg in checks],
            "admission": {"clusterQueue": "vision"},
        },
    }


QR, ADM, BUDGET = "QuotaReserved", "Admitted", "gpuplatform-budget"
SENTENCES = [
    ([(QR, "False", "Pending", "no room")], [], "pending", "Waiting for quota: no room"),
    (
        [(QR, "False", "Inadmissible", "LocalQueue x doesn't exist")],
        [],
        "pending",
        "Kueue cannot queue it: LocalQueue x doesn't exist",
    ),
    (
        [(QR, "True", QR, "")],
        [(BUDGET, "Pending", "awaiting approval by rita")],
        "quota_reserved",
        "Quota reserved in ClusterQueue vision; waiting for gpuplatform: awaiting approval by rita",
    ),
    (
        [(QR, "True", QR, ""), (ADM, "True", ADM, "")],
        [],
        "admitted",
        "Admitted: running in ClusterQueue vision.",
    ),
    (
        [("Evicted", "True", "AdmissionCheck", "over budget")],
        [],
        "evicted",
        "Held by an admission check, queued again later: over budget",
    ),
    (
        [("Evicted", "True", "DeactivatedDueToAdmissionCheck", "no")],
        [],
        "evicted",
        "Rejected and deactivated: no",
    ),
    (
        [(ADM, "True", ADM, ""), ("Finished", "True", "Succeeded", "Job finished")],
        [],
        "finished",
        "Finished: Job finished",
    ),
]


@pytest.mark.parametrize(("conditions", "checks", "state", "words"), SENTENCES)
def test_each_state_of_kueue_reads_as_a_sentence(conditions, checks, state, words):
    parsed = parse_workload(_workload(conditions, checks))
    assert parsed.state == state
    assert (
        plain_reason(
            state=parsed.state,
            reason=parsed.reason,
            message=parsed.message,
            cluster_queue="vision",
            checks=parsed.checks,
        )
        == words
    )


def test_a_workload_of_the_wrong_shape_reads_as_pending_not_an_error():
    parsed = parse_workload(
        {"metadata": {"uid": "u"}, "spec": {"podSets": "nope"}, "status": {"conditions": 3}}
    )
    assert (parsed.state, parsed.pod_sets, parsed.flavors) == ("pending", (), {})
