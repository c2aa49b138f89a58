"""coordination.k8s.io/v1 Leases (a controller's leader election) and batch/v1 Jobs (with suspend)."""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.kubesim.helpers import status_of


def _lease(holder: str) -> dict:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "gpuplatform-leader", "namespace": "kube-system"},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, "leaseTransitions": 0},
    }


def test_leader_election_takes_a_lease_and_a_stale_renewal_conflicts(kube_api_client):
    coordination = client.CoordinationV1Api(kube_api_client)
    taken = coordination.create_namespaced_lease("kube-system", _lease("pod-a"))

    renewed = coordination.read_namespaced_lease("gpuplatform-leader", "kube-system")
    renewed.spec.renew_time = "2026-01-01T00:00:10.000000Z"
    coordination.replace_namespaced_lease("gpuplatform-leader", "kube-system", renewed)
    taken.spec.holder_identity = "pod-b"  # pod-b acts on the old resourceVersion
    with pytest.raises(client.ApiException) as err:
        coordination.replace_namespaced_lease("gpuplatform-leader", "kube-system", taken)

    assert err.value.status == 409 and status_of(err.value)["reason"] == "Conflict"
    current = coordination.read_namespaced_lease("gpuplatform-leader", "kube-system")
    assert current.spec.holder_identity == "pod-a"
    assert {r.name for r in coordination.get_api_resources().resources} == {"leases"}


def _job(name: str, *, suspend: bool) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": "main"}},
        "spec": {
            "suspend": suspend,
            "parallelism": 2,
            "completions": 2,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "train", "image": "trainer:1"}],
                }
            },
        },
    }


def test_a_suspended_job_is_defaulted_and_unsuspended_by_a_patch(kube_api_client):
    batch = client.BatchV1Api(kube_api_client)
    created = batch.create_namespaced_job("default", _job("train", suspend=True))

    resumed = batch.patch_namespaced_job(
        "train", "default", {"spec": {"suspend": False}}, _content_type="application/merge-patch+json"
    )

    assert created.spec.suspend is True and created.spec.backoff_limit == 6
    assert created.spec.completion_mode == "NonIndexed"
    assert created.spec.template.spec.containers[0].termination_message_path == "/dev/termination-log"
    assert resumed.spec.suspend is False and resumed.metadata.generation == 2


def test_a_job_needs_a_restart_policy_of_never_or_on_failure(kube_api_client):
    body = _job("bad", suspend=False)
    body["spec"]["template"]["spec"]["restartPolicy"] = "Always"

    with pytest.raises(client.ApiException) as err:
        client.BatchV1Api(kube_api_client).create_namespaced_job("default", body)

    assert err.value.status == 422
    assert status_of(err.value)["details"]["causes"] == [
        {
            "reason": "FieldValueNotSupported",
            "message": 'Unsupported value: "Always": supported values: "OnFailure", "Never"',
            "field": "spec.template.spec.restartPolicy",
        }
    ]


def test_a_running_jobs_template_is_immutable(kube_api_client):
    batch = client.BatchV1Api(kube_api_client)
    batch.create_namespaced_job("default", _job("train", suspend=False))

    with pytest.raises(client.ApiException) as err:
        batch.patch_namespaced_job(
            "train",
            "default",
            {"spec": {"template": {"spec": {"nodeSelector": {"pool": "a100"}}}}},
            _content_type="application/merge-patch+json",
        )

    assert err.value.status == 422
    assert status_of(err.value)["details"]["causes"][0]["field"] == "spec.template"
