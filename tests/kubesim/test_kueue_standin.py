"""The `kueue` controller plays Kueue v0.19's protocol over HTTP: Job -> Workload -> quota reserved ->
admission checks -> admitted and unsuspended; quota, cohort borrowing, Retry, Rejected, Finished.

Clients speak to kubesim over HTTPS with the official client; the controller runs deterministically
(`settle()`) on a fake clock, so backoffs are exact.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any, cast

import pytest
from kubernetes import client

from kubesim.controllers import start_controllers

GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
NS = "team-vision"


class Clock:
    def __init__(self) -> None:
        self.now = 1_767_614_400.0  # 2026-01-05T12:00:00Z

    def __call__(self) -> float:
        return self.now


class Cluster:
    """A simulator with Kueue's CRDs, the kueue controller and the clients a test needs."""

    def __init__(self, sim: Any) -> None:
        self.sim = sim
        self.api = sim.api_client()
        self.custom = client.CustomObjectsApi(self.api)
        self.batch = client.BatchV1Api(self.api)
        self.core = client.CoreV1Api(self.api)
        self.clock = Clock()
        self.controllers = start_controllers(sim.store, enabled={"kueue"}, background=False, clock=self.clock)

    def settle(self) -> None:
        assert self.controllers.settle(timeout=20)

    def create(self, plural: str, body: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        if namespace:
            return cast(
                dict[str, Any],
                self.custom.create_namespaced_custom_object(GROUP, VERSION, namespace, plural, body),
            )
        return cast(dict[str, Any], self.custom.create_cluster_custom_object(GROUP, VERSION, plural, body))

    def get(self, plural: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        if namespace:
            return cast(
                dict[str, Any],
                self.custom.get_namespaced_custom_object(GROUP, VERSION, namespace, plural, name),
            )
        return cast(dict[str, Any], self.custom.get_cluster_custom_object(GROUP, VERSION, plural, name))

    def workload_of(self, job_name: str) -> dict[str, Any]:
        items = self.custom.list_namespaced_custom_object(GROUP, VERSION, NS, "workloads")["items"]
        owned = [w for w in items if w["metadata"]["ownerReferences"][0]["name"] == job_name]
        assert len(owned) == 1, owned
        return owned[0]

    def set_check(self, workload: str, check: str, state: str, message: str = "", **extra: Any) -> None:
        """What an admission check controller does: apply its check's state, forcing, as Kueue's own do."""
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Workload",
            "metadata": {"name": workload, "namespace": NS},
            "status": {
                "admissionChecks": [
                    {
                        "name": check,
                        "state": state,
                        "message": message,
                        "lastTransitionTime": _text(self.clock.now),
                        **extra,
                    }
                ]
            },
        }
        self.custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, NS, "workloads", workload, body,
            field_manager="gpuplatform", force=True, _content_type="application/apply-patch+yaml",
        )  # fmt: skip

    def job(self, name: str) -> Any:
        return self.batch.read_namespaced_job(name, NS)


def _text(epoch: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def cluster(kubesim_factory) -> Iterator[Cluster]:
    sim = kubesim_factory(kueue=True)
    c = Cluster(sim)
    c.core.create_namespace({"metadata": {"name": NS}})
    yield c
    c.controllers.stop()
    c.api.close()


def flavor(name: str, pool: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": {"nodeLabels": {"gpuplatform.io/node-pool": pool}},
    }


def cluster_queue(
    name: str,
    *,
    gpus: int,
    cohort: str | None = None,
    borrowing: int | None = None,
    lending: int | None = None,
    checks: list[str] | None = None,
    flavor_name: str = "h100",
) -> dict[str, Any]:
    quota: dict[str, Any] = {"name": "nvidia.com/gpu", "nominalQuota": gpus}
    if borrowing is not None:
        quota["borrowingLimit"] = borrowing
    if lending is not None:
        quota["lendingLimit"] = lending
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": flavor_name, "resources": [quota]}]}
        ],
    }
    if cohort:
        spec["cohortName"] = cohort
    if checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": c} for c in checks]}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": spec,
    }


def local_queue(name: str, cq: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"clusterQueue": cq},
    }


def admission_check(name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "AdmissionCheck",
        "metadata": {"name": name},
        "spec": {"controllerName": "gpuplatform.io/budget"},
    }


def job(
    name: str, *, gpus: int, queue: str = "vision", parallelism: int = 1, **labels: str
) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": queue, **labels}},
        "spec": {
            "suspend": True,
            "parallelism": parallelism,
            "completions": parallelism,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "train",
                            "image": "trainer:1",
                            "resources": {
                                "requests": {"nvidia.com/gpu": str(gpus)},
                                "limits": {"nvidia.com/gpu": str(gpus)},
                            },
                        }
                    ],
                }
            },
        },
    }


def conditions(obj: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in obj["status"].get("conditions", [])}


def activate(c: Cluster, check: str) -> None:
    """The check's controller marks it Active, or Kueue keeps every ClusterQueue using it inactive."""
    c.custom.patch_cluster_custom_object_status(
        GROUP, VERSION, "admissionchecks", check,
        {"status": {"conditions": [{
            "type": "Active", "status": "True", "reason": "Active", "message": "gpuplatform is ready",
            "lastTransitionTime": _text(c.clock.now),
        }]}},
        _content_type="application/merge-patch+json",
    )  # fmt: skip


def test_a_job_becomes_a_workload_that_waits_for_its_check_then_is_admitted_and_started(cluster):
    c = cluster
    c.create("resourceflavors", flavor("h100", "h100-pool"))
    c.create("admissionchecks", admission_check("budget"))
    activate(c, "budget")
    c.create("clusterqueues", cluster_queue("vision", gpus=4, checks=["budget"]))
    c.create("localqueues", local_queue("vision", "vision"), NS)
    c.create("workloadpriorityclasses", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "WorkloadPriorityClass",
        "metadata": {"name": "high"}, "value": 1000,
    })  # fmt: skip
    created = c.batch.create_namespaced_job(
        NS, job("train", gpus=2, parallelism=2, **{"kueue.x-k8s.io/priority-class": "high"})
    )

    c.settle()

    wl = c.workload_of("train")
    digest = hashlib.sha1(f"Job\nbatch\ntrain\n{created.metadata.uid}".encode()).hexdigest()[:5]
    assert wl["metadata"]["name"] == f"job-train-{digest}"
    assert wl["metadata"]["ownerReferences"][0]["uid"] == created.metadata.uid
    assert wl["metadata"]["labels"]["kueue.x-k8s.io/job-uid"] == created.metadata.uid
    assert wl["spec"]["queueName"] == "vision"
    assert wl["spec"]["priority"] == 1000
    assert wl["spec"]["priorityClassRef"] == {
        "group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high",
    }  # fmt: skip
    assert wl["spec"]["podSets"][0]["name"] == "main" and wl["spec"]["podSets"][0]["count"] == 2
    assert wl["status"]["admission"] == {
        "clusterQueue": "vision",
        "podSetAssignments": [
            {"name": "main", "flavors": {"nvidia.com/gpu": "h100"}, "resourceUsage": {"nvidia.com/gpu": "4"},
             "count": 2},
        ],
    }  # fmt: skip
    assert conditions(wl)["QuotaReserved"] == (
        "True",
        "QuotaReserved",
        "Quota reserved in ClusterQueue vision",
    )
    assert "Admitted" not in conditions(wl)
    assert [(a["name"], a["state"]) for a in wl["status"]["admissionChecks"]] == [("budget", "Pending")]
    assert c.job("train").spec.suspend is True

    c.set_check(wl["metadata"]["name"], "budget", "Ready", "within budget")
    c.settle()

    wl = c.workload_of("train")
    assert conditions(wl)["Admitted"] == ("True", "Admitted", "The workload is admitted")
    started = c.job("train")
    assert started.spec.suspend is False
    assert started.spec.template.spec.node_selector == {"gpuplatform.io/node-pool": "h100-pool"}
    assert started.spec.template.metadata.labels["kueue.x-k8s.io/podset"] == "main"
    cq = c.get("clusterqueues", "vision")["status"]
    assert (cq["reservingWorkloads"], cq["admittedWorkloads"], cq["pendingWorkloads"]) == (1, 1, 0)
    assert cq["flavorsUsage"] == [
        {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "total": "4", "borrowed": "0"}]}
    ]
    lq = c.get("localqueues", "vision", NS)
    assert lq["status"]["admittedWorkloads"] == 1 and conditions(lq)["Active"][0] == "True"


def test_of_two_jobs_only_the_one_that_fits_the_nominal_quota_gets_it(cluster):
    c = cluster
    c.create("resourceflavors", flavor("h100", "h100-pool"))
    c.create("clusterqueues", cluster_queue("vision", gpus=4))
    c.create("localqueues", local_queue("vision", "vision"), NS)
    c.batch.create_namespaced_job(NS, job("first", gpus=3))
    c.settle()
    c.clock.now += 1
    c.batch.create_namespaced_job(NS, job("second", gpus=2))

    c.settle()

    first, second = c.workload_of("first"), c.workload_of("second")
    assert conditions(first)["Admitted"][0] == "True"  # no checks: admitted with the reservation
    assert c.job("first").spec.suspend is False
    assert conditions(second)["QuotaReserved"] == (
        "False", "Pending",
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in "
        "flavor h100, 1 more needed",
    )  # fmt: skip
    assert second["status"]["resourceRequests"] == [{"name": "main", "resources": {"nvidia.com/gpu": "2"}}]
    assert c.job("second").spec.suspend is True
    cq = c.get("clusterqueues", "vision")["status"]
    assert (cq["pendingWorkloads"], cq["admittedWorkloads"]) == (1, 1)

    # The first finishes: its quota is released and the second is admitted.
    c.batch.patch_namespaced_job_status(
        "first", NS,
        {"status": {"conditions": [{"type": "Complete", "status": "True", "message": "done"}]}},
        _content_type="application/merge-patch+json",
    )  # fmt: skip
    c.settle()

    assert conditions(c.workload_of("first"))["Finished"] == ("True", "Succeeded", "done")
    assert "finalizers" not in c.workload_of("first")["metadata"]
    assert conditions(c.workload_of("second"))["Admitted"][0] == "True"
    assert c.job("second").spec.suspend is False


def test_a_queue_borrows_from_its_cohort_within_its_borrowing_limit(cluster):
    c = cluster
    c.create("resourceflavors", flavor("h100", "h100-pool"))
    c.create("cohorts", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Cohort", "metadata": {"name": "org"},
        "spec": {"parentName": "root"},
    })  # fmt: skip
    c.create("clusterqueues", cluster_queue("vision", gpus=2, cohort="org", borrowing=3))
    c.create("clusterqueues", cluster_queue("speech", gpus=4, cohort="org", lending=1))
    c.create("localqueues", local_queue("vision", "vision"), NS)
    c.batch.create_namespaced_job(NS, job("big", gpus=3))  # 2 own + 1 lent by speech
    c.settle()
    c.clock.now += 1
    c.batch.create_namespaced_job(NS, job("more", gpus=1))  # speech lends only 1

    c.settle()

    assert conditions(c.workload_of("big"))["Admitted"][0] == "True"
    assert conditions(c.workload_of("more"))["QuotaReserved"] == (
        "False", "Pending",
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in "
        "flavor h100, 1 more needed",
    )  # fmt: skip
    reservation = c.get("clusterqueues", "vision")["status"]["flavorsReservation"]
    assert reservation == [
        {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "total": "3", "borrowed": "1"}]}
    ]

    c.batch.create_namespaced_job(NS, job("huge", gpus=4))  # more than 2 + min(3, 1) could ever give
    c.settle()
    assert conditions(c.workload_of("huge"))["QuotaReserved"][2] == (
        "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor h100, "
        "previously considered podsets requests (0) + current podset request (4) > maximum capacity (3)"
    )


def test_retry_releases_the_reservation_and_requeues_after_the_checks_delay(cluster):
    c = cluster
    c.create("resourceflavors", flavor("h100", "h100-pool"))
    c.create("admissionchecks", admission_check("budget"))
    activate(c, "budget")
    c.create("clusterqueues", cluster_queue("vision", gpus=4, checks=["budget"]))
    c.create("localqueues", local_queue("vision", "vision"), NS)
    c.batch.create_namespaced_job(NS, job("train", gpus=2))
    c.settle()
    name = c.workload_of("train")["metadata"]["name"]

    c.set_check(name, "budget", "Retry", "budget exhausted until 13:00", requeueAfterSeconds=600)
    c.settle()

    wl = c.workload_of("train")
    cond = conditions(wl)
    evicted = 'Evicted due to AdmissionCheck in Retry state: "budget" (budget exhausted until 13:00)'
    assert cond["Evicted"] == ("True", "AdmissionCheck", evicted)
    assert cond["QuotaReserved"] == ("False", "Pending", evicted)
    assert cond["Requeued"] == ("False", "AdmissionCheck", evicted)
    assert "admission" not in wl["status"]
    assert wl["status"]["admissionChecks"][0]["state"] == "Pending"
    assert wl["status"]["admissionChecks"][0]["retryCount"] == 1
    assert wl["status"]["requeueState"]["requeueAt"] == _text(c.clock.now + 600)
    assert c.job("train").spec.suspend is True

    c.clock.now += 599
    c.settle()
    assert conditions(c.workload_of("train"))["QuotaReserved"][0] == "False"

    c.clock.now += 1
    c.settle()
    wl = c.workload_of("train")
    assert conditions(wl)["Requeued"] == ("True", "BackoffFinished", "The workload backoff was finished")
    assert conditions(wl)["QuotaReserved"][0] == "True"
    assert conditions(wl)["Evicted"] == ("False", "QuotaReserved", f"Previously: {evicted}")
    c.set_check(name, "budget", "Ready")
    c.settle()
    assert conditions(c.workload_of("train"))["Admitted"][0] == "True"
    assert c.job("train").spec.suspend is False


def test_rejected_deactivates_the_workload(cluster):
    c = cluster
    c.create("resourceflavors", flavor("h100", "h100-pool"))
    c.create("admissionchecks", admission_check("budget"))
    activate(c, "budget")
    c.create("clusterqueues", cluster_queue("vision", gpus=4, checks=["budget"]))
    c.create("localqueues", local_queue("vision", "vision"), NS)
    c.batch.create_namespaced_job(NS, job("train", gpus=2))
    c.settle()
    name = c.workload_of("train")["metadata"]["name"]

    c.custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, NS, "workloads", name,
        {"status": {"admissionChecks": [{
            "name": "budget", "state": "Rejected", "message": "over the GE-hour budget",
            "lastTransitionTime": _text(c.clock.now),
        }]}},
        _content_type="application/merge-patch+json",
    )  # fmt: skip
    c.settle()

    wl = c.workload_of("train")
    assert wl["spec"]["active"] is False
    cond = conditions(wl)
    message = (
        "The workload is deactivated due to AdmissionCheck in Rejected state: "
        '"budget" (over the GE-hour budget)'
    )
    assert cond["Evicted"] == ("True", "DeactivatedDueToAdmissionCheck", message)
    assert cond["QuotaReserved"] == ("False", "Pending", message)
    assert "DeactivationTarget" not in cond
    assert wl["status"]["schedulingStats"]["evictions"] == [
        {"reason": "Deactivated", "underlyingCause": "AdmissionCheck", "count": 1}
    ]
    assert c.job("train").spec.suspend is True
    assert c.get("clusterqueues", "vision")["status"]["reservingWorkloads"] == 0


def test_a_workload_waits_while_its_queue_or_check_is_missing(cluster):
    c = cluster
    c.batch.create_namespaced_job(NS, job("orphan", gpus=1, queue="nowhere"))
    c.create("resourceflavors", flavor("h100", "h100-pool"))
    c.create("clusterqueues", cluster_queue("vision", gpus=4, checks=["budget"]))
    c.create("localqueues", local_queue("vision", "vision"), NS)
    c.batch.create_namespaced_job(NS, job("train", gpus=1))

    c.settle()

    assert conditions(c.workload_of("orphan"))["QuotaReserved"] == (
        "False", "Inadmissible", "LocalQueue nowhere doesn't exist",
    )  # fmt: skip
    assert conditions(c.workload_of("train"))["QuotaReserved"] == (
        "False", "Inadmissible", "ClusterQueue vision is inactive",
    )  # fmt: skip
    assert conditions(c.get("clusterqueues", "vision"))["Active"] == (
        "False", "AdmissionCheckNotFound",
        "Can't admit new workloads: references missing AdmissionCheck(s): budget.",
    )  # fmt: skip

    c.create("admissionchecks", admission_check("budget"))
    activate(c, "budget")
    c.settle()
    assert conditions(c.workload_of("train"))["QuotaReserved"][0] == "True"


def test_the_cli_installs_kueue_and_its_controller_admits_a_job(tmp_path):
    import subprocess
    import sys
    import time

    from kubernetes import config

    from tests.kubesim_fixtures import REPO_ROOT

    kubeconfig = tmp_path / "kubeconfig"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubesim", "--port", "0", "--kubeconfig", str(kubeconfig), "--kueue",
         "--controllers", "kueue"],
        cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not kubeconfig.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        api = config.new_client_from_config(config_file=str(kubeconfig))
        custom, batch = client.CustomObjectsApi(api), client.BatchV1Api(api)
        client.CoreV1Api(api).create_namespace({"metadata": {"name": NS}})
        custom.create_cluster_custom_object(GROUP, VERSION, "resourceflavors", flavor("h100", "h100-pool"))
        custom.create_cluster_custom_object(GROUP, VERSION, "clusterqueues", cluster_queue("vision", gpus=1))
        custom.create_namespaced_custom_object(
            GROUP, VERSION, NS, "localqueues", local_queue("vision", "vision")
        )
        batch.create_namespaced_job(NS, job("train", gpus=1))
        while time.monotonic() < deadline and batch.read_namespaced_job("train", NS).spec.suspend:
            time.sleep(0.1)
        started = batch.read_namespaced_job("train", NS)
    finally:
        proc.terminate()
        proc.wait(timeout=10)

    assert started.spec.suspend is False
    assert started.spec.template.spec.node_selector == {"gpuplatform.io/node-pool": "h100-pool"}
