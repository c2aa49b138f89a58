"""Least privilege: what the service's Kubernetes clients call, recorded by kubesim's request log,
is exactly what the chart's ClusterRoles grant the identity that makes the call; nothing missing,
nothing extra.

Recorded here: the inventory sync (a full list, then the watches a sync worker keeps open); the
Celery worker's materialisation (ResourceQuota and ResourceClaim applied, a released claim deleted)
and its apply of admission rules (ValidatingAdmissionPolicies and bindings applied, then pruned when a
rule is removed; asked for over the API, which only queues it); and the node agent's gpu-operator
applier (its node's labels, the bundle's ConfigMaps)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.db import connection

from inventory.models import NodePool
from inventory.services import create_cluster
from inventory.sync.runner import ClusterSync
from inventory.sync.service import sync_cluster
from policies.services.admission import delete_admission_rule, save_admission_rule
from policies.tasks import apply_admission_task
from quotas.models import CapacityRequest, Flavor, PriorityClass, Queue, Quota
from quotas.tasks import materialise_request_task
from tests.deploy.chart import EXAMPLES, by_kind, render, values_of

pytestmark = pytest.mark.django_db(transaction=True)

GPU = "nvidia.com/gpu"
URL = "/api/v1/capacity-requests/"
# Which Deployment's service account makes which calls, and the ClusterRoles it must hold.
COMPONENTS = {"sync": ("gpuplatform-sync",), "worker": ("gpuplatform-materialise", "gpuplatform-admission")}


def granted(role: dict) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


@pytest.fixture
def chart():
    objects = render(values_of(next(p for p in EXAMPLES if p.stem == "values-single-cluster")))
    roles = {r["metadata"]["name"]: r for r in by_kind(objects, "ClusterRole")}
    return objects, roles


@pytest.fixture
def recorded(cast, api, kubesim_factory):
    """What the sync and the worker asked of a cluster, each on its own."""
    sim = kubesim_factory(scenario="mixed", nodes=20, seed=1, request_log=True, bookmark_interval=0.5)
    log = sim.api.request_log
    cluster = create_cluster(actor=cast.pat, name="sim", kubeconfig=sim.kubeconfig_path.read_text())
    calls = {}

    # the sync worker: one full sync, then list and watch as `sync_inventory --cluster sim` does
    log.clear()
    sync_cluster(cluster_id=str(cluster.pk))
    syncer = ClusterSync(cluster)
    thread = threading.Thread(target=_watch, args=(syncer,), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while len({e.resource for e in log.entries() if e.verb == "watch"}) < 5 and time.monotonic() < deadline:
        time.sleep(0.2)
    syncer.stop_event.set()
    sim.store.close_watches()
    thread.join(timeout=15)
    calls["sync"] = log.permissions()

    # the worker: a quota and a claim applied, then the claim deleted when its request is released
    pool = NodePool.objects.get(cluster=cluster, name="NVIDIA-H100-80GB-HBM3")
    h100 = Flavor.objects.create(name="h100", pool=pool, resources=[{"name": GPU, "ge_per_unit": "1"}])
    dra = Flavor.objects.create(
        name="h100-dra",
        kind="dra",
        pool=pool,
        device_class="gpu.nvidia.com",
        resources=[{"name": "gpu.nvidia.com", "ge_per_unit": "1"}],
    )
    PriorityClass.objects.create(name="batch", value=100)
    Queue.objects.create(tenant=cast.vision, name="default")
    Quota.objects.create(tenant=cast.vision, flavor=h100, resource=GPU, nominal=4)
    Quota.objects.create(tenant=cast.vision, flavor=dra, resource="gpu.nvidia.com", nominal=2)
    alice = api(cast.alice)
    log.clear()
    ids = [
        alice.post(
            URL, {"tenant": "vision", "flavor": f, "priority_class": "batch", "amount": 1}, format="json"
        ).json()["id"]
        for f in ("h100", "h100-dra")
    ]
    for pk in ids:
        materialise_request_task(pk)
    assert alice.post(f"{URL}{ids[1]}/release/", {}, format="json").json()["state"] == "released"
    for pk in ids:
        materialise_request_task(pk)
    assert CapacityRequest.objects.get(pk=ids[0]).state == "active"

    # ...and the admission rules: vision's rule applied, then removed and pruned. The web process
    # only queues the apply (202); the worker's task makes every call.
    rule = save_admission_rule(
        actor=cast.pat,
        tenant_id=cast.vision.pk,
        pool_id=pool.pk,
        allowed_flavor_ids=[h100.pk],
        max_per_pod=2,
        allowed_priority_class_ids=[],
    )
    pat = api(cast.pat)
    for removed in (False, True):
        if removed:
            delete_admission_rule(actor=cast.pat, rule_id=rule.pk)
        before = len(log.entries())
        asked = pat.post("/api/v1/admission-rules/apply/", {"cluster": str(cluster.pk)}, format="json")
        assert asked.status_code == 202 and len(log.entries()) == before  # the web made no call
        assert apply_admission_task(asked.json()["id"]) == "done"
    assert pat.get(asked["Location"]).json()["removed"] == [
        "ValidatingAdmissionPolicyBinding/gpuplatform-tenant-vision",
        "ValidatingAdmissionPolicy/gpuplatform-tenant-vision",
    ]
    calls["worker"] = log.permissions()
    return calls


def _watch(syncer: ClusterSync) -> None:
    try:
        syncer.run(resync_seconds=3600)
    finally:
        connection.close()


def test_each_identity_is_granted_exactly_what_it_calls(recorded, chart):
    _, roles = chart
    # what each is for: the sync lists and watches six kinds; the worker applies and deletes
    assert recorded["sync"] == {
        (group, kind, verb)
        for group, kinds in {
            "": ("nodes", "pods"),
            "resource.k8s.io": ("deviceclasses", "resourceslices", "devicetaintrules", "resourceclaims"),
        }.items()
        for kind in kinds
        for verb in ("list", "watch")
    }
    admission = "admissionregistration.k8s.io"
    assert recorded["worker"] == {
        ("", "resourcequotas", "patch"),
        ("resource.k8s.io", "resourceclaims", "patch"),
        ("resource.k8s.io", "resourceclaims", "delete"),
        *(
            (admission, kind, verb)
            for kind in ("validatingadmissionpolicies", "validatingadmissionpolicybindings")
            for verb in ("patch", "list", "delete")  # apply is a patch; prune lists ours, deletes one
        ),
    }
    for component, role_names in COMPONENTS.items():
        role = set().union(*(granted(roles[name]) for name in role_names))
        calls = recorded[component]
        assert calls - role == set(), f"{component} calls what its ClusterRole does not grant"
        assert role - calls == set(), f"{component}'s ClusterRole grants what it never calls"


def test_each_role_is_bound_to_the_service_account_of_the_pods_that_call(chart):
    objects, _ = chart
    account_of = {
        d["metadata"]["labels"]["app.kubernetes.io/component"]: d["spec"]["template"]["spec"][
            "serviceAccountName"
        ]
        for d in by_kind(objects, "Deployment")
    }
    bound = {
        (s["name"], b["roleRef"]["name"])
        for b in by_kind(objects, "ClusterRoleBinding")
        for s in b["subjects"]
    }
    assert (account_of["sync"], "gpuplatform-sync") in bound
    assert (account_of["worker"], "gpuplatform-materialise") in bound
    assert (account_of["worker"], "gpuplatform-admission") in bound
    (agent,) = by_kind(objects, "DaemonSet")
    assert (agent["spec"]["template"]["spec"]["serviceAccountName"], "gpuplatform-agent") in bound
    # the web and beat pods call no Kubernetes API: no binding, and no token mounted
    assert {name for name, _ in bound} == {"gpuplatform-sync", "gpuplatform-worker", "gpuplatform-agent"}
    for component in ("web", "beat"):
        pod = next(
            d
            for d in by_kind(objects, "Deployment")
            if d["metadata"]["labels"]["app.kubernetes.io/component"] == component
        )
        assert pod["spec"]["template"]["spec"]["automountServiceAccountToken"] is False
    # and nothing namespaced beyond the agent's ConfigMaps (test_the_agent_is_granted_exactly_...)
    assert {r["metadata"]["name"] for r in by_kind(objects, "Role")} <= {"gpuplatform-agent-configs"}


def test_the_agent_is_granted_exactly_what_its_applier_calls(chart, kubesim_factory):
    from kubernetes import client as k8s

    from nodeagent.appliers import ApplyFailed
    from nodeagent.appliers.gpu_operator import GpuOperatorApplier
    from policies.compiler import render as compiled

    objects, roles = chart
    # the ConfigMaps the chart makes and lets the agent patch are the ones bundles carry
    carried = {
        (compiled.GPU_OPERATOR_NAMESPACE, compiled.DEVICE_PLUGIN_CONFIGMAP),
        (compiled.GPU_OPERATOR_NAMESPACE, compiled.MIG_PARTED_CONFIGMAP),
        ("kube-system", compiled.HAMI_CONFIGMAP),
    }
    made = {(c["metadata"].get("namespace"), c["metadata"]["name"]) for c in by_kind(objects, "ConfigMap")}
    assert carried <= made
    agent_roles = [
        r for r in by_kind(objects, "Role") if r["metadata"]["name"] == "gpuplatform-agent-configs"
    ]
    allowed = {
        (r["metadata"]["namespace"], n)
        for r in agent_roles
        for rule in r["rules"]
        for n in rule["resourceNames"]
    }
    assert allowed == carried

    sim = kubesim_factory(scenario="mixed", nodes=4, seed=1, request_log=True)
    api = sim.api_client()
    core: Any = k8s.CoreV1Api(api)  # plain dicts for bodies
    for namespace, name in sorted(carried):  # as the install left them
        core.create_namespaced_config_map(namespace, {"metadata": {"name": name, "namespace": namespace}})
    node = str(core.list_node().items[0].metadata.name)
    sim.api.request_log.clear()
    applier = GpuOperatorApplier(node=node, api=api, state_timeout=5, poll_seconds=0.2)
    payload = {
        "bundle": {
            "labels": {
                "nvidia.com/device-plugin.config": "gpuplatform-r2",
                "nvidia.com/mig.config": "all-disabled",
            },
            "configmaps": [
                {"namespace": ns, "name": name, "data": {"gpuplatform-r2": "version: v1\n"}}
                for ns, name in carried
            ],
        }
    }
    outcome = "applied"
    try:
        applier.apply(payload)
    except ApplyFailed as exc:  # mig-manager may refuse the geometry: the calls are what is checked
        outcome = exc.code
    assert outcome in ("applied", "mig_config_failed", "mig_config_timeout")
    calls = sim.api.request_log.permissions()
    assert calls == {("", "nodes", "get"), ("", "nodes", "patch"), ("", "configmaps", "patch")}
    role = granted(roles["gpuplatform-agent"]) | {g for r in agent_roles for g in granted(r)}
    assert calls - role == set(), "the agent calls what its roles do not grant"
    assert role - calls == set(), "the agent's roles grant what it never calls"
