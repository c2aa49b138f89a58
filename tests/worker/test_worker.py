"""The Celery jobs run: a real worker (and beat) materialise what the API admitted, expire what ran out
on schedule, and finish a task once after being killed in the middle of it.

Nothing here calls a task: the test process only serves HTTP (the live server, whose commits queue the
tasks as production does) and reads the database and kubesim back.
"""

from __future__ import annotations

import datetime as dt
import time

import kubernetes
import pytest
import requests
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from gpuplatform.accounts.tokens import issue_api_token
from inventory.models import NodePool
from inventory.services import create_cluster
from inventory.sync.service import sync_cluster
from quotas.materialise import QUOTA_NAME
from quotas.models import (
    CapacityRequest,
    Flavor,
    PriorityClass,
    Queue,
    Quota,
    RequestState,
    RequestTransition,
)
from tests.prometheus_server import free_port
from tests.worker.conftest import VISIBILITY_TIMEOUT_S, eventually

pytestmark = pytest.mark.django_db(transaction=True)

GPU = "nvidia.com/gpu"
URL = "/api/v1/capacity-requests/"


@pytest.fixture
def fleet(cast, kubesim_factory):
    """kubesim's mixed scenario synced as cluster "sim"; vision holds a nominal 4 H100s."""
    sim = kubesim_factory(scenario="mixed", nodes=8, seed=1)
    cluster = create_cluster(actor=cast.pat, name="sim", kubeconfig=sim.kubeconfig_path.read_text())
    sync_cluster(cluster_id=str(cluster.pk))
    pool = NodePool.objects.get(cluster=cluster, name="NVIDIA-H100-80GB-HBM3")
    h100 = Flavor.objects.create(
        name="h100", pool=pool, gpu_model="H100-80GB", resources=[{"name": GPU, "ge_per_unit": "1"}]
    )
    PriorityClass.objects.create(name="batch", value=100)
    Queue.objects.create(tenant=cast.vision, name="default")
    Quota.objects.create(tenant=cast.vision, flavor=h100, resource=GPU, nominal=4)
    return sim, kubernetes.client.CoreV1Api(sim.api_client())


@pytest.fixture
def alice_http(cast, live_server):
    """alice's token over real HTTP to the live server."""
    token = issue_api_token(actor=cast.alice, name="worker-tests", scopes=["read", "write"]).plaintext
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"

    def submit(**body):
        payload = {"tenant": "vision", "flavor": "h100", "priority_class": "batch", **body}
        response = session.post(live_server.url + URL, json=payload)
        assert response.status_code == 201, response.text
        return response.json()

    yield submit
    session.close()  # a kept-alive connection holds a live-server thread, and its database session


def hard_limit(core, namespace="team-vision"):
    """The ResourceQuota's spec.hard in kubesim, or None while there is none."""
    try:
        return core.read_namespaced_resource_quota(QUOTA_NAME, namespace).spec.hard
    except kubernetes.client.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def state_of(request_id):
    return CapacityRequest.objects.get(pk=request_id).state


def test_a_request_admitted_over_http_is_materialised_in_the_cluster_by_the_worker(celery, fleet, alice_http):
    # given: a worker on this test's queue, and no ResourceQuota yet in team-vision
    _, core = fleet
    celery.worker()
    assert hard_limit(core) is None
    # when: alice asks for 3 H100s within her nominal 4
    body = alice_http(amount=3)
    assert body["state"] == "admitted"
    # then: the worker applied the quota (3) and moved the request to active
    eventually(lambda: state_of(body["id"]) == RequestState.ACTIVE, what="the request to become active")
    assert hard_limit(core) == {f"requests.{GPU}": "3"}


def test_beat_runs_the_admission_loop_which_expires_a_request_whose_time_ran_out(celery, fleet, alice_http):
    # given: a worker and beat (the loop every second); alice holds 2 H100s for 60 s
    _, core = fleet
    celery.worker()
    body = alice_http(amount=2, duration_seconds=60)
    eventually(lambda: state_of(body["id"]) == RequestState.ACTIVE, what="the request to become active")
    assert hard_limit(core) == {f"requests.{GPU}": "2"}
    # when: the minute is over (its end moved to now rather than waiting for it), and beat is running
    CapacityRequest.objects.filter(pk=body["id"]).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    celery.beat()
    # then: the loop expired it and the worker lowered the quota to 0, with no call from the test
    eventually(lambda: state_of(body["id"]) == RequestState.EXPIRED, what="beat's loop to expire it")
    eventually(lambda: hard_limit(core) == {f"requests.{GPU}": "0"}, what="the quota lowered to 0")
    assert "expired" in CapacityRequest.objects.get(pk=body["id"]).reason_code


def test_a_worker_killed_mid_task_and_restarted_finishes_the_work_once(celery, fleet, alice_http):
    # given: a worker, and kubesim holding the next ResourceQuota patch for 8 s
    sim, core = fleet
    first = celery.worker()
    held = sim.faults.add("latency", verbs="patch", resources="resourcequotas", seconds=8.0, count=1)
    body = alice_http(amount=3)
    # when: the worker is SIGKILLed while its task waits on kubesim
    eventually(lambda: held.fired == 1, what="the worker's patch to reach kubesim")
    first.kill()
    assert state_of(body["id"]) == RequestState.ADMITTED  # the task did not finish
    # and a new worker starts once the message is past its visibility timeout: the worker sweeps for
    # such messages as it starts (then only every 100 s), and hands them back to the queue
    time.sleep(VISIBILITY_TIMEOUT_S + 0.5)
    celery.worker()
    # then: the work is done, and done once: one admitted -> active transition, the quota at 3
    eventually(lambda: state_of(body["id"]) == RequestState.ACTIVE, what="the restarted worker to finish it")
    assert hard_limit(core) == {f"requests.{GPU}": "3"}
    moves = RequestTransition.objects.filter(request_id=body["id"]).values_list("from_state", "to_state")
    assert list(moves) == [("", "pending"), ("pending", "admitted"), ("admitted", "active")]


def test_the_worker_exports_each_task_run_with_its_outcome(celery, fleet, alice_http):
    # given: a worker serving its own metrics (CELERY_METRICS_PORT), as the chart runs it
    port = free_port()
    celery.worker(CELERY_METRICS_PORT=str(port))
    # when: two admitted requests are materialised by it
    for amount in (1, 2):
        request_id = alice_http(amount=amount)["id"]
        eventually(lambda: state_of(request_id) == RequestState.ACTIVE, what="the request to become active")  # noqa: B023

    # then: its endpoint counts two successful quotas.materialise_requests runs
    def runs() -> float:
        text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == "gpuplatform_task_duration_seconds_count" and sample.labels == {
                    "task": "quotas.materialise_requests",
                    "outcome": "success",
                }:
                    return sample.value
        return 0.0

    eventually(lambda: runs() >= 2, what="two task runs in the worker's metrics")
    assert runs() == 2
