"""The compiled Kueue objects applied to a cluster and kept true (issue 28, item 3), end to end on
kubesim with Kueue v0.19.2's CRDs and its Kueue stand-in: applied by server-side apply as
`gpuplatform`, our AdmissionCheck Active; a tenant's Job takes quota in its ClusterQueue; a
ClusterQueue edited by hand is recorded as drift, shown, and put back; objects no longer wanted are
deleted; a refusal of the compiler is shown and nothing is applied; nothing is written to a
`resourcequota` cluster; switching removes the other backend's objects.

Cast: acme -> research -> vision (team-vision), nlp (team-nlp). Numbers: vision 4 and nlp 4 H100s
nominal under research, which holds no quota of its own."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction
from kubernetes import client as k8s

from inventory.models import KueueApplyState, NodePool
from inventory.services import create_cluster, update_cluster
from inventory.sync.service import sync_cluster
from kubesim.controllers import start_controllers
from quotas.kueue_apply.triggers import _Batch
from quotas.materialise import QUOTA_NAME
from quotas.models import CapacityRequest, Flavor, PriorityClass, Queue, Quota
from quotas.tasks import apply_kueue_task, materialise_request_task

pytestmark = pytest.mark.django_db(transaction=True)

GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
GPU = "nvidia.com/gpu"
POOL = "NVIDIA-H100-80GB-HBM3"


class Kueue:
    """The simulated cluster as a test reads and edits it, and its Kueue stand-in."""

    def __init__(self, sim: Any) -> None:
        self.sim = sim
        self.api = sim.api_client()
        # Any: plain dicts in and out, as a test writes and reads them
        self.custom: Any = k8s.CustomObjectsApi(self.api)
        self.core: Any = k8s.CoreV1Api(self.api)
        self.batch: Any = k8s.BatchV1Api(self.api)
        self.controllers = start_controllers(sim.store, enabled={"kueue"}, background=False)

    def settle(self) -> None:
        assert self.controllers.settle(timeout=20)

    def get(self, plural: str, name: str, namespace: str = "") -> dict[str, Any]:
        if namespace:
            return self.custom.get_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)
        return self.custom.get_cluster_custom_object(GROUP, VERSION, plural, name)

    def names(self, plural: str) -> list[str]:
        return sorted(o["metadata"]["name"] for o in self.sim.store.list(plural))

    def workloads(self, namespace: str) -> list[dict[str, Any]]:
        return self.custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "workloads")["items"]


@pytest.fixture
def kueue(kubesim_factory):
    sim = kubesim_factory(scenario="mixed", nodes=20, seed=1, kueue=True, request_log=True)
    cluster = Kueue(sim)
    present = {n.metadata.name for n in cluster.core.list_namespace().items}
    for namespace in {"team-vision", "team-nlp"} - present:
        cluster.core.create_namespace({"metadata": {"name": namespace}})
    yield cluster
    cluster.controllers.stop()
    cluster.api.close()


@pytest.fixture
def sim_cluster(cast, kueue):
    cluster = create_cluster(actor=cast.pat, name="sim", kubeconfig=kueue.sim.kubeconfig_path.read_text())
    sync_cluster(cluster_id=str(cluster.pk))
    pool = NodePool.objects.get(cluster=cluster, name=POOL)
    h100 = Flavor.objects.create(name="h100", pool=pool, resources=[{"name": GPU, "ge_per_unit": "1"}])
    PriorityClass.objects.create(name="batch", value=100)
    for tenant in (cast.vision, cast.nlp):
        Queue.objects.create(tenant=tenant, name="default")
        Quota.objects.create(tenant=tenant, flavor=h100, resource=GPU, nominal=4)
    return cluster


def switch(cast, cluster, backend: str) -> None:
    update_cluster(actor=cast.pat, cluster_id=cluster.pk, enforcement_backend=backend)


def gpu_job(name: str, *, gpus: int) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": "default"}},
        "spec": {
            "suspend": True,
            "parallelism": 1,
            "completions": 1,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "train",
                            "image": "trainer:1",
                            "resources": {"requests": {GPU: str(gpus)}, "limits": {GPU: str(gpus)}},
                        }
                    ],
                }
            },
        },
    }


def conditions(obj: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in (obj.get("status") or {}).get("conditions", [])}


def test_a_kueue_cluster_gets_the_compiled_objects_and_a_tenants_job_takes_quota_in_its_queue(
    cast, kueue, sim_cluster
):
    # given a cluster switched to kueue
    switch(cast, sim_cluster, "kueue")
    # when its apply runs (queued after the switch commits; called here as the worker would)
    result = apply_kueue_task(str(sim_cluster.pk))
    # then the quota tree is there, applied by gpuplatform
    assert kueue.names("clusterqueues") == ["nlp", "vision"]
    assert kueue.names("cohorts") == ["acme", "globex", "research"]
    assert kueue.names("resourceflavors") == ["h100"]
    assert kueue.names("workloadpriorityclasses") == ["batch"]
    vision = kueue.get("clusterqueues", "vision")
    assert vision["spec"]["cohortName"] == "research"
    assert vision["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] in (4, "4")
    assert vision["spec"]["namespaceSelector"]["matchExpressions"][0]["values"] == ["team-vision"]
    managers = {m["manager"] for m in vision["metadata"]["managedFields"]}
    assert "gpuplatform" in managers
    check = kueue.get("admissionchecks", "gpuplatform-budget")
    assert conditions(check)["Active"] == ("True", "Active")
    assert kueue.get("localqueues", "default", "team-vision")["spec"]["clusterQueue"] == "vision"
    assert "ClusterQueue/vision" in result["applied"] and result["drift"] == []
    state = KueueApplyState.objects.get(cluster=sim_cluster)
    assert state.backend_applied == "kueue" and state.problems == [] and state.error == ""

    # and Kueue (the stand-in) takes it from there: the ClusterQueue is active, a Job of vision's
    # gets a Workload that reserves 2 of vision's 4 H100s, and waits on gpuplatform's check
    kueue.settle()
    assert conditions(kueue.get("clusterqueues", "vision"))["Active"][0] == "True"
    kueue.batch.create_namespaced_job("team-vision", gpu_job("train", gpus=2))
    kueue.settle()
    (workload,) = kueue.workloads("team-vision")
    assert workload["status"]["admission"]["clusterQueue"] == "vision"
    assert conditions(workload)["QuotaReserved"] == ("True", "QuotaReserved")
    assert [(c["name"], c["state"]) for c in workload["status"]["admissionChecks"]] == [
        ("gpuplatform-budget", "Pending")
    ]
    usage = kueue.get("clusterqueues", "vision")["status"]["flavorsReservation"][0]["resources"][0]
    assert (usage["name"], str(usage["total"])) == (GPU, "2")


def test_a_hand_edited_cluster_queue_is_recorded_shown_and_put_back(cast, client, kueue, sim_cluster):
    switch(cast, sim_cluster, "kueue")
    apply_kueue_task(str(sim_cluster.pk))
    # given someone raises vision's nominal quota to 10 by hand (kubectl edit: an update by another manager)
    queue = kueue.get("clusterqueues", "vision")
    queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 10
    kueue.custom.replace_cluster_custom_object(
        GROUP, VERSION, "clusterqueues", "vision", queue, field_manager="kubectl-edit"
    )
    # when the next apply runs
    result = apply_kueue_task(str(sim_cluster.pk))
    # then the drift is recorded, and the quota is back at 4
    path = "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"
    assert result["drift"] == [
        {"object": "ClusterQueue/vision", "fields": [{"path": path, "live": 10, "wanted": "4"}]}
    ]
    nominal = kueue.get("clusterqueues", "vision")["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert str(nominal["nominalQuota"]) == "4"
    # and a platform-admin sees it on the cluster page
    client.force_login(cast.pat)
    page = client.get("/inventory/").content.decode()
    assert "Drift repaired" in page and "ClusterQueue/vision" in page
    assert f"<code>{path}</code>: was 10, set back to 4" in page
    # and an apply with nothing changed finds no new drift and changes nothing
    assert apply_kueue_task(str(sim_cluster.pk))["drift"] == []


def test_objects_no_longer_wanted_are_deleted(cast, kueue, sim_cluster):
    switch(cast, sim_cluster, "kueue")
    apply_kueue_task(str(sim_cluster.pk))
    # given nlp's quota and queue are gone
    Quota.objects.filter(tenant=cast.nlp).delete()
    result = apply_kueue_task(str(sim_cluster.pk))
    assert "ClusterQueue/nlp" in result["removed"] and "LocalQueue/team-nlp/default" in result["removed"]
    assert kueue.names("clusterqueues") == ["vision"]
    assert kueue.names("localqueues") == ["default"]


def test_a_refusal_of_the_compiler_is_shown_and_nothing_is_applied(cast, client, kueue, sim_cluster):
    switch(cast, sim_cluster, "kueue")
    apply_kueue_task(str(sim_cluster.pk))
    before = kueue.get("clusterqueues", "vision")
    # given a queue setting Kueue v1beta2 cannot express, and a quota change in the same catalogue
    Queue.objects.filter(tenant=cast.vision).update(reclaim_within_cohort="LowerOrNewerEqualPriority")
    Quota.objects.filter(tenant=cast.vision).update(nominal=3)
    log = kueue.sim.api.request_log
    log.clear()
    result = apply_kueue_task(str(sim_cluster.pk))
    # then nothing was sent to the cluster (not even the quota change), and the reason is kept
    assert [e for e in log.entries() if e.verb != "get"] == []
    assert len(result["problems"]) == 1 and "LowerOrNewerEqualPriority" in result["problems"][0]
    assert kueue.get("clusterqueues", "vision")["spec"] == before["spec"]
    client.force_login(cast.pat)
    page = client.get("/inventory/").content.decode()
    assert "Not applied: the catalogue cannot be expressed in Kueue." in page
    assert "LowerOrNewerEqualPriority" in page


def test_a_cluster_without_kueues_crds_is_flagged(cast, client, kubesim_factory):
    sim = kubesim_factory(scenario="mixed", nodes=4, seed=1)
    cluster = create_cluster(actor=cast.pat, name="plain", kubeconfig=sim.kubeconfig_path.read_text())
    switch(cast, cluster, "kueue")
    with pytest.raises(Exception, match="install Kueue"):
        apply_kueue_task(str(cluster.pk))
    client.force_login(cast.pat)
    page = client.get("/inventory/").content.decode()
    assert "The last apply failed:" in page and "install Kueue v0.19" in page


def test_nothing_is_written_to_a_resourcequota_cluster(cast, kueue, sim_cluster):
    log = kueue.sim.api.request_log
    log.clear()
    assert apply_kueue_task(str(sim_cluster.pk)) == {"skipped": "resourcequota"}
    assert log.entries() == []
    assert kueue.names("clusterqueues") == []


def test_switching_to_kueue_removes_the_resource_quotas_and_back_removes_kueues_objects(
    cast, api, kueue, sim_cluster
):
    # given vision holds 2 H100s, enforced by a ResourceQuota
    created = api(cast.alice).post(
        "/api/v1/capacity-requests/",
        {"tenant": "vision", "flavor": "h100", "priority_class": "batch", "amount": 2},
        format="json",
    )
    materialise_request_task(created.json()["id"])
    quota = kueue.core.read_namespaced_resource_quota(QUOTA_NAME, "team-vision")
    assert quota.spec.hard[f"requests.{GPU}"] == "2"
    # when the cluster is switched to kueue and its apply runs
    switch(cast, sim_cluster, "kueue")
    result = apply_kueue_task(str(sim_cluster.pk))
    # then the ResourceQuota is gone and Kueue holds the quota
    assert f"ResourceQuota/team-vision/{QUOTA_NAME}" in result["removed"]
    assert [q.metadata.name for q in kueue.core.list_namespaced_resource_quota("team-vision").items] == []
    assert kueue.names("clusterqueues") == ["nlp", "vision"]
    # when it is switched back
    switch(cast, sim_cluster, "resourcequota")
    result = apply_kueue_task(str(sim_cluster.pk))
    # then gpuplatform's Kueue objects are gone and the held request's ResourceQuota is back
    assert "ClusterQueue/vision" in result["removed"] and result["rematerialised"] == 1
    assert kueue.names("clusterqueues") == kueue.names("cohorts") == kueue.names("localqueues") == []
    materialise_request_task(created.json()["id"])  # what the apply queued
    quota = kueue.core.read_namespaced_resource_quota(QUOTA_NAME, "team-vision")
    assert quota.spec.hard[f"requests.{GPU}"] == "2"
    assert CapacityRequest.objects.get(pk=created.json()["id"]).state == "active"


def test_a_catalogue_change_queues_one_apply_per_kueue_cluster_after_commit(cast, sim_cluster):
    switch(cast, sim_cluster, "kueue")
    with transaction.atomic():
        Quota.objects.filter(tenant=cast.vision).update(nominal=5)  # an update() sends no signal
        quota = Quota.objects.get(tenant=cast.vision)
        quota.nominal = 6
        quota.save()
        Queue.objects.create(tenant=cast.vision, name="interactive")
        from django.db import connection

        batches = [entry[1] for entry in connection.run_on_commit if isinstance(entry[1], _Batch)]
        # one batch for the whole transaction, naming every kueue cluster at commit
        assert len(batches) == 1 and batches[0].every_kueue_cluster
