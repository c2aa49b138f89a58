"""Admission rules compile to ValidatingAdmissionPolicies and bindings that pass the official schema,
whose CEL compiles and judges pods as intended (cel-python), and that land in kubesim by server-side
apply; rules removed are pruned (issue 12 item 4)."""

from __future__ import annotations

from typing import Any

import celpy
import kubernetes
import kubernetes_validate
import pytest

from gpuplatform.audit.models import AuditEvent
from gpuplatform.errors import Forbidden, ValidationFailed
from inventory.kube import KubeError
from inventory.services import create_cluster
from policies.compiler.admission import MAX_GPU_CONTAINERS, PoolRule, cel_expressions
from policies.models import AdmissionApply
from policies.services.admission import (
    KUBERNETES_SCHEMA_VERSION,
    compile_cluster_admission,
    delete_admission_rule,
    request_admission_apply,
    save_admission_rule,
)
from policies.tasks import apply_admission_task
from quotas.models import Flavor, PriorityClass
from tests.helpers import assert_problem
from tests.policies.factories import h100_pool

pytestmark = pytest.mark.django_db


def apply_admission(*, cluster_id, actor):
    """As the platform does it: the web process asks, a worker runs the task by id."""
    job = request_admission_apply(actor=actor, cluster_id=cluster_id)
    assert apply_admission_task(str(job.pk)) == "done"
    job.refresh_from_db()
    return {"applied": job.applied, "removed": job.removed}


H100 = "nvidia.com/gpu-h100"
MIG = "nvidia.com/mig-1g.10gb-h100"


@pytest.fixture
def rules(cast, kubesim):
    """vision may use only the h100 flavor (not the MIG one) on pool h100, at most 2 per pod, with
    priority batch; pool t4 is reserved to nlp."""
    cluster = create_cluster(actor=cast.pat, name="sim", kubeconfig=kubesim.kubeconfig_path.read_text())
    pool = h100_pool("h100", cluster=cluster)
    t4 = h100_pool("t4", cluster=cluster, nodes=1)
    t4.tenant = cast.nlp
    t4.save()
    whole = Flavor.objects.create(name="h100", pool=pool, resources=[{"name": H100, "ge_per_unit": "1"}])
    Flavor.objects.create(name="h100-mig-1g", pool=pool, resources=[{"name": MIG, "ge_per_unit": "1/7"}])
    Flavor.objects.create(name="t4", pool=t4, resources=[{"name": "nvidia.com/gpu-t4", "ge_per_unit": "1"}])
    batch = PriorityClass.objects.create(name="batch", value=100)
    PriorityClass.objects.create(name="prod", value=1000)
    rule = save_admission_rule(
        actor=cast.pat,
        tenant_id=cast.vision.pk,
        pool_id=pool.pk,
        allowed_flavor_ids=[whole.pk],
        max_per_pod=2,
        allowed_priority_class_ids=[batch.pk],
    )
    return cluster, rule, kubernetes.client.AdmissionregistrationV1Api(kubesim.api_client())


def test_every_manifest_passes_the_official_schema(rules):
    cluster, _, _ = rules
    manifests = compile_cluster_admission(cluster=cluster)
    kinds = sorted((m["kind"], m["metadata"]["name"]) for m in manifests)
    assert kinds == [
        ("ValidatingAdmissionPolicy", "gpuplatform-reserved-t4"),
        ("ValidatingAdmissionPolicy", "gpuplatform-tenant-vision"),
        ("ValidatingAdmissionPolicyBinding", "gpuplatform-reserved-t4"),
        ("ValidatingAdmissionPolicyBinding", "gpuplatform-tenant-vision"),
    ]
    for manifest in manifests:
        kubernetes_validate.validate(manifest, KUBERNETES_SCHEMA_VERSION, strict=True)
    bindings = {m["metadata"]["name"]: m for m in manifests if m["kind"].endswith("Binding")}
    vision = bindings["gpuplatform-tenant-vision"]["spec"]["matchResources"]["namespaceSelector"]
    assert vision["matchExpressions"] == [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-vision"]}
    ]
    reserved = bindings["gpuplatform-reserved-t4"]["spec"]["matchResources"]["namespaceSelector"]
    assert reserved["matchExpressions"][0] == {
        "key": "kubernetes.io/metadata.name",
        "operator": "NotIn",
        "values": ["team-nlp"],
    }


def _evaluate(expression, pod, namespace="team-vision"):
    env = celpy.Environment()
    program = env.program(env.compile(expression))
    containers = pod["spec"]["containers"] + pod["spec"].get("initContainers", [])
    return program.evaluate(
        {
            "object": celpy.json_to_cel(pod),
            "variables": celpy.json_to_cel({"containers": containers}),
            "namespaceObject": celpy.json_to_cel({"metadata": {"name": namespace}}),
        }
    )


def pod(*limits, priority="batch"):
    spec = {"containers": [{"name": f"c{i}", "resources": {"limits": lim}} for i, lim in enumerate(limits)]}
    if priority:
        spec["priorityClassName"] = priority
    return {"spec": spec}


def test_every_cel_expression_compiles(rules):
    cluster, _, _ = rules
    env = celpy.Environment()
    count = 0
    for manifest in compile_cluster_admission(cluster=cluster):
        spec = manifest["spec"]
        if manifest["kind"] != "ValidatingAdmissionPolicy":
            continue
        for item in spec["variables"] + spec["matchConditions"]:
            env.compile(item["expression"])
            count += 1
        for validation in spec["validations"]:
            env.compile(validation["expression"])
            env.compile(validation["messageExpression"])
            count += 2
    assert count == 2 * 2 + 3 * 2 + 1 * 2  # two policies' variable+condition; 3 vision rules; 1 reserved


def test_the_vision_policy_judges_pods_as_the_rules_say(rules):
    cluster, _, _ = rules
    policy = next(
        m
        for m in compile_cluster_admission(cluster=cluster)
        if m["metadata"]["name"] == "gpuplatform-tenant-vision"
    )
    condition = policy["spec"]["matchConditions"][0]["expression"]
    flavors, most, priority = (v["expression"] for v in policy["spec"]["validations"])
    assert _evaluate(condition, pod({"cpu": "1"})) is not True  # a CPU pod is not even evaluated
    ok = pod({H100: "1"}, {H100: "1"})
    assert all(_evaluate(e, ok) for e in (condition, flavors, most, priority))
    assert not _evaluate(flavors, pod({MIG: "1"}))  # the MIG flavor is not allowed to vision
    assert not _evaluate(most, pod({H100: "2"}, {H100: "1"}))  # 3 in one pod, 2 allowed
    assert not _evaluate(priority, pod({H100: "1"}, priority="prod"))
    assert not _evaluate(priority, pod({H100: "1"}, priority=None))
    message = policy["spec"]["validations"][1]["messageExpression"]
    assert _evaluate(message, ok) == (
        "namespace team-vision: tenant vision may ask for at most 2 GPU unit(s) of pool h100 per pod"
    )


def test_the_pod_total_counts_every_container_up_to_the_unrolled_limit():
    rule = PoolRule(pool="h100", pool_resources=(H100,), max_per_pod=MAX_GPU_CONTAINERS)
    most = cel_expressions(rule)["max_per_pod"]
    assert _evaluate(most, pod(*[{H100: "1"}] * MAX_GPU_CONTAINERS))
    assert not _evaluate(most, pod(*[{H100: "1"}] * (MAX_GPU_CONTAINERS + 1)))  # refused, not uncounted


def test_they_land_in_kubesim_by_server_side_apply_and_removed_rules_are_pruned(cast, rules):
    cluster, rule, admission = rules
    result = apply_admission(cluster_id=cluster.pk, actor=cast.pat)
    assert len(result["applied"]) == 4 and result["removed"] == []
    read = admission.read_validating_admission_policy("gpuplatform-tenant-vision")
    assert read.spec.failure_policy == "Fail" and len(read.spec.validations) == 3
    assert read.metadata.managed_fields[0].manager == "gpuplatform"
    binding = admission.read_validating_admission_policy_binding("gpuplatform-tenant-vision")
    assert binding.spec.policy_name == "gpuplatform-tenant-vision" and binding.spec.validation_actions == [
        "Deny"
    ]
    assert apply_admission(cluster_id=cluster.pk, actor=cast.pat)["removed"] == []  # idempotent

    delete_admission_rule(actor=cast.pat, rule_id=rule.pk)
    result = apply_admission(cluster_id=cluster.pk, actor=cast.pat)
    assert sorted(result["removed"]) == [
        "ValidatingAdmissionPolicy/gpuplatform-tenant-vision",
        "ValidatingAdmissionPolicyBinding/gpuplatform-tenant-vision",
    ]
    names = [p.metadata.name for p in admission.list_validating_admission_policy().items]
    assert names == ["gpuplatform-reserved-t4"]


def test_only_platform_admins_write_rules_and_bad_rules_are_refused(cast, rules):
    _, rule, _ = rules
    t4_flavor = Flavor.objects.get(name="t4")
    with pytest.raises(Forbidden):
        delete_admission_rule(actor=cast.alice, rule_id=rule.pk)
    with pytest.raises(ValidationFailed) as wrong_pool:
        save_admission_rule(
            actor=cast.pat,
            tenant_id=cast.vision.pk,
            pool_id=rule.pool_id,
            allowed_flavor_ids=[t4_flavor.pk],
            max_per_pod=None,
            allowed_priority_class_ids=[],
            rule_id=rule.pk,
        )
    assert wrong_pool.value.code == "policy.flavor_not_in_pool"
    with pytest.raises(ValidationFailed) as zero:
        save_admission_rule(
            actor=cast.pat,
            tenant_id=cast.vision.pk,
            pool_id=rule.pool_id,
            allowed_flavor_ids=[],
            max_per_pod=0,
            allowed_priority_class_ids=[],
            rule_id=rule.pk,
        )
    assert zero.value.code == "policy.max_per_pod_invalid"


def test_the_cluster_itself_refuses_a_pod_that_breaks_its_tenants_rules(cast, rules, kubesim):
    # Applied to kubesim, which evaluates ValidatingAdmissionPolicies as the API server does: the
    # tenant's pods are judged by the cluster, not only by us.
    cluster, _, _ = rules
    apply_admission(cluster_id=cluster.pk, actor=cast.pat)
    core: Any = kubernetes.client.CoreV1Api(kubesim.api_client())  # plain dicts for bodies, as kubectl sends
    if "team-vision" not in {n.metadata.name for n in core.list_namespace().items}:
        core.create_namespace({"metadata": {"name": "team-vision"}})
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "too-big"},
        **pod({H100: "2"}, {H100: "1"}),
    }
    for container in body["spec"]["containers"]:
        container["image"] = "trainer:1"
    with pytest.raises(kubernetes.client.ApiException) as refused:
        core.create_namespaced_pod("team-vision", body)
    assert refused.value.status == 403  # the rules' reason is Forbidden, as the API server answers it
    answer = str(refused.value.body)
    assert "ValidatingAdmissionPolicy 'gpuplatform-tenant-vision'" in answer
    assert "at most 2 GPU unit(s) of pool h100 per pod" in answer
    names = [p.metadata.name for p in core.list_namespaced_pod("team-vision").items]
    assert "too-big" not in names

    within = {**body, "metadata": {"name": "fits"}}
    within["spec"] = {
        **body["spec"],
        "containers": [{**body["spec"]["containers"][0], "resources": {"limits": {H100: "2"}}}],
    }
    assert core.create_namespaced_pod("team-vision", within).metadata.name == "fits"


def test_applying_over_http_queues_a_job_a_worker_runs_and_the_caller_polls(
    cast, rules, api, django_capture_on_commit_callbacks
):
    # The web process holds no cluster credential: it records the ask and queues the task by id; the
    # worker (the chart's service account with the admission-policy rights) makes the calls.
    cluster, _, admission = rules
    pat = api(cast.pat)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        asked = pat.post("/api/v1/admission-rules/apply/", {"cluster": str(cluster.pk)}, format="json")
    assert asked.status_code == 202, asked.json()
    job = asked.json()
    assert (job["state"], job["cluster_name"], job["requested_by"], job["applied"]) == (
        "queued",
        "sim",
        "pat",
        [],
    )
    assert asked["Location"] == f"/api/v1/admission-applies/{job['id']}/"
    assert len(queued) == 1  # one message, sent once the ask is committed
    assert admission.list_validating_admission_policy().items == []  # nothing reached the cluster yet
    requested = AuditEvent.objects.get(action="admission.apply_requested")
    assert (requested.actor_label, requested.after["apply"]) == ("pat", job["id"])
    # a second ask while the first is still queued is the same job (it compiles the rules when it runs)
    again = pat.post("/api/v1/admission-rules/apply/", {"cluster": str(cluster.pk)}, format="json")
    assert (again.status_code, again.json()["id"]) == (202, job["id"])

    assert apply_admission_task(job["id"]) == "done"  # what the worker runs
    polled = pat.get(asked["Location"]).json()
    assert polled["state"] == "done" and polled["error"] == ""
    assert sorted(polled["applied"]) == [
        "ValidatingAdmissionPolicy/gpuplatform-reserved-t4",
        "ValidatingAdmissionPolicy/gpuplatform-tenant-vision",
        "ValidatingAdmissionPolicyBinding/gpuplatform-reserved-t4",
        "ValidatingAdmissionPolicyBinding/gpuplatform-tenant-vision",
    ]
    assert polled["started_at"] and polled["finished_at"]
    assert {p.metadata.name for p in admission.list_validating_admission_policy().items} == {
        "gpuplatform-reserved-t4",
        "gpuplatform-tenant-vision",
    }
    done = AuditEvent.objects.get(action="admission.applied")
    assert done.actor_label == "pat" and done.after["state"] == "done" and len(done.after["applied"]) == 4
    # a redelivered message finds the job finished: nothing is applied or audited twice
    assert apply_admission_task(job["id"]) == "done"
    assert AuditEvent.objects.filter(action="admission.applied").count() == 1
    # the list shows it too, newest first
    assert [j["id"] for j in pat.get("/api/v1/admission-applies/").json()["results"]] == [job["id"]]


def test_a_refused_apply_is_failed_with_the_clusters_answer_and_asking_again_retries(
    cast, rules, kubesim, api
):
    cluster, _, admission = rules
    pat = api(cast.pat)
    refusal = kubesim.faults.add("error", verbs="patch", resources="validatingadmissionpolicies", status=503)
    job = pat.post("/api/v1/admission-rules/apply/", {"cluster": str(cluster.pk)}, format="json").json()
    with pytest.raises(KubeError):
        apply_admission_task(job["id"])  # raised for the worker's log and failure metrics
    failed = pat.get(f"/api/v1/admission-applies/{job['id']}/").json()
    assert failed["state"] == "failed" and "503" in failed["error"] and failed["applied"] == []
    assert AuditEvent.objects.filter(action="admission.apply_failed").count() == 1
    assert not AuditEvent.objects.filter(action="admission.applied").exists()

    kubesim.faults.remove(refusal.id)
    retry = pat.post("/api/v1/admission-rules/apply/", {"cluster": str(cluster.pk)}, format="json").json()
    assert retry["id"] != job["id"]  # a failed job stays as it was; a new one is queued
    assert apply_admission_task(retry["id"]) == "done"
    assert len(admission.list_validating_admission_policy().items) == 2


def test_only_platform_admins_apply_and_an_unknown_cluster_queues_nothing(cast, rules, api):
    cluster, _, _ = rules
    refused = api(cast.alice).post(
        "/api/v1/admission-rules/apply/", {"cluster": str(cluster.pk)}, format="json"
    )
    assert_problem(refused, 403, "permission_denied")
    unknown = api(cast.pat).post(
        "/api/v1/admission-rules/apply/", {"cluster": "00000000-0000-0000-0000-000000000000"}, format="json"
    )
    assert_problem(unknown, 404, "policy.unknown_cluster")
    malformed = api(cast.pat).post("/api/v1/admission-rules/apply/", {"cluster": "sim"}, format="json")
    assert malformed.status_code == 400
    assert not AdmissionApply.objects.exists()
    assert not AuditEvent.objects.filter(action__startswith="admission.apply").exists()
    # and a tenant never sees the applies (platform objects: they name every tenant's policies)
    request_admission_apply(actor=cast.pat, cluster_id=cluster.pk)
    assert api(cast.alice).get("/api/v1/admission-applies/").json()["results"] == []
