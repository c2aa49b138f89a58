"""Least privilege for Kueue enforcement: what the worker's Kueue jobs and the inventory sync of a
kueue cluster call (recorded by kubesim's request log) is exactly what the chart's ``<release>-kueue``
and ``<release>-sync-kueue`` ClusterRoles grant (with ``-sync`` for the rest of the sync). Recorded:
a cluster switched to kueue (its ResourceQuotas removed, the compiled objects applied, our
AdmissionCheck marked Active, a Workload's check answered), its sync (a list, then the watches),
then switched back (every object of ours deleted)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.db import connection
from kubernetes import client as k8s

from inventory.models import NodePool
from inventory.services import create_cluster, update_cluster
from inventory.sync.runner import ClusterSync
from inventory.sync.service import sync_cluster
from kubesim.controllers import start_controllers
from quotas.kueue_check.service import check_kueue_workloads
from quotas.models import Flavor, PriorityClass, Queue, Quota
from quotas.tasks import apply_kueue_task
from tests.deploy.chart import EXAMPLES, by_kind, render, values_of
from tests.deploy.test_rbac import _watch, granted
from tests.quotas.test_kueue_apply import gpu_job

pytestmark = pytest.mark.django_db(transaction=True)

GPU = "nvidia.com/gpu"
KUEUE = "kueue.x-k8s.io"


@pytest.fixture
def recorded(cast, kubesim_factory):
    sim = kubesim_factory(scenario="mixed", nodes=20, seed=1, kueue=True, request_log=True)
    cluster = create_cluster(actor=cast.pat, name="sim", kubeconfig=sim.kubeconfig_path.read_text())
    sync_cluster(cluster_id=str(cluster.pk))
    pool = NodePool.objects.get(cluster=cluster, name="NVIDIA-H100-80GB-HBM3")
    h100 = Flavor.objects.create(name="h100", pool=pool, resources=[{"name": GPU, "ge_per_unit": "1"}])
    PriorityClass.objects.create(name="batch", value=100)
    for tenant in (cast.vision, cast.nlp):
        Queue.objects.create(tenant=tenant, name="default")
        Quota.objects.create(tenant=tenant, flavor=h100, resource=GPU, nominal=4)
    log = sim.api.request_log
    log.clear()
    update_cluster(actor=cast.pat, cluster_id=cluster.pk, enforcement_backend="kueue")
    apply_kueue_task(str(cluster.pk))
    worker = log.permissions()
    # the admission check's pass: a Job of vision's waits on gpuplatform-budget, which says Ready
    controllers = start_controllers(sim.store, enabled={"kueue"}, background=False)
    assert controllers.settle(timeout=20)
    batch: Any = k8s.BatchV1Api(sim.api_client())  # plain dicts in, as a test writes them
    batch.create_namespaced_job("team-vision", gpu_job("train", gpus=1))
    assert controllers.settle(timeout=20)
    sync_cluster(cluster_id=str(cluster.pk))
    log.clear()
    assert list(check_kueue_workloads(cluster_id=str(cluster.pk))["decided"].values()) == ["Ready"]
    worker |= log.permissions()
    controllers.stop()
    # the sync worker of the kueue cluster: a full sync, then its watches
    log.clear()
    cluster.refresh_from_db()
    sync_cluster(cluster_id=str(cluster.pk))
    syncer = ClusterSync(cluster)
    thread = threading.Thread(target=_watch, args=(syncer,), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while len({e.resource for e in log.entries() if e.verb == "watch"}) < 6 and time.monotonic() < deadline:
        time.sleep(0.2)
    syncer.stop_event.set()
    sim.store.close_watches()
    thread.join(timeout=15)
    sync = log.permissions()
    log.clear()
    update_cluster(actor=cast.pat, cluster_id=cluster.pk, enforcement_backend="resourcequota")
    assert "ClusterQueue/vision" in apply_kueue_task(str(cluster.pk))["removed"]
    connection.close()
    return {"worker": worker | log.permissions(), "sync": sync}


def test_the_worker_and_the_sync_are_granted_exactly_what_they_call_on_a_kueue_cluster(recorded):
    kinds = ("resourceflavors", "workloadpriorityclasses", "admissionchecks", "cohorts", "clusterqueues")
    assert recorded["worker"] == {
        *((KUEUE, kind, verb) for kind in (*kinds, "localqueues") for verb in ("list", "patch", "delete")),
        (KUEUE, "admissionchecks/status", "patch"),
        (KUEUE, "workloads/status", "patch"),  # gpuplatform's admission check answering
        ("", "resourcequotas", "delete"),
    }
    objects = render(values_of(next(p for p in EXAMPLES if p.stem == "values-single-cluster")))
    roles = {r["metadata"]["name"]: granted(r) for r in by_kind(objects, "ClusterRole")}
    assert roles["gpuplatform-kueue"] == recorded["worker"]
    # the sync of a kueue cluster calls what -sync grants, and the Workloads' list and watch besides
    assert roles["gpuplatform-sync"] <= recorded["sync"]
    extra = recorded["sync"] - roles["gpuplatform-sync"]
    assert extra == {(KUEUE, "workloads", "list"), (KUEUE, "workloads", "watch")}
    assert roles["gpuplatform-sync-kueue"] == extra
    bound = {
        (s["name"], b["roleRef"]["name"])
        for b in by_kind(objects, "ClusterRoleBinding")
        for s in b["subjects"]
    }
    assert ("gpuplatform-worker", "gpuplatform-kueue") in bound
    assert ("gpuplatform-sync", "gpuplatform-sync-kueue") in bound
