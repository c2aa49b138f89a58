"""100 concurrent HTTP requests against room for N admit exactly N, every time (DESIGN section 10).

A hundred clients POST to a live server at the same moment (behind a barrier); the server serves them
on a pool of WORKERS threads, each its own database connection, as a production WSGI server would, so
the flavor and cohort advisory locks must serialise the decisions.
"""

from __future__ import annotations

import json
import os
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.contrib.staticfiles.handlers import StaticFilesHandler

from gpuplatform.accounts.tokens import issue_api_token
from inventory.models import ShareableUnit
from quotas.models import CapacityRequest, Flavor, Queue, Quota
from tests.inventory import factories as inv
from tests.quotas.conftest import GPU, give_capacity, make_catalog
from tests.quotas.pooled_server import PooledLiveServerThread

pytestmark = pytest.mark.django_db(transaction=True)

CONCURRENT = 100
WORKERS = int(os.environ.get("ADMISSION_TEST_WORKERS", "12"))
ROUNDS = int(os.environ.get("ADMISSION_TEST_ROUNDS", "20"))


@pytest.fixture
def pooled_server(transactional_db: None) -> Iterator[str]:
    thread = PooledLiveServerThread("127.0.0.1", StaticFilesHandler, workers=WORKERS)
    thread.daemon = True
    thread.start()
    thread.is_ready.wait()
    if thread.error:
        raise thread.error
    yield f"http://127.0.0.1:{thread.port}"
    thread.terminate()


def post_request(
    url: str, token: str, barrier: threading.Barrier, tenant: str = "vision", flavors: list[str] | None = None
) -> tuple[int, str]:
    choice = {"flavors": flavors} if flavors else {"flavor": "h100"}
    body = json.dumps({"tenant": tenant, "amount": 1, **choice}).encode()
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Idempotency-Key": f"concurrency-{uuid.uuid4().hex}",
        },
    )
    barrier.wait()  # all hundred leave together
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())["state"]
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()[:200]


def test_a_hundred_concurrent_http_requests_never_over_admit(cast, pooled_server):
    catalog = make_catalog(cast, physical=200, vision=0, nlp=0)
    url = f"{pooled_server}/api/v1/capacity-requests/"
    for round_no in range(ROUNDS):
        # a token per round: 2,000 POSTs on one token inside a minute would meet the per-token rate limit
        token = issue_api_token(
            actor=cast.dana, name=f"concurrency-{round_no}", scopes=["read", "write"]
        ).plaintext
        # given room for exactly n in vision's (and the whole tree's) quota
        room = 7 + round_no
        Quota.objects.filter(pk=catalog.vision_quota.pk).update(nominal=room)
        CapacityRequest.objects.all().delete()
        barrier = threading.Barrier(CONCURRENT)
        # when a hundred HTTP requests arrive at once
        with ThreadPoolExecutor(max_workers=CONCURRENT) as clients:
            futures = [clients.submit(post_request, url, token, barrier) for _ in range(CONCURRENT)]
            answers = [future.result() for future in futures]
        # then every one is answered, exactly n are admitted and the rest wait
        assert {status for status, _ in answers} == {201}, [a for a in answers if a[0] != 201][:3]
        states = [state for _, state in answers]
        assert states.count("admitted") == room, (round_no, states.count("admitted"))
        assert CapacityRequest.objects.filter(state="admitted").count() == room
        assert (
            CapacityRequest.objects.filter(state="pending", reason_code="waiting_for_quota").count()
            == CONCURRENT - room
        )


PHYSICAL_ROUNDS = int(os.environ.get("ADMISSION_TEST_PHYSICAL_ROUNDS", "5"))


def test_two_cohorts_racing_for_the_last_gpus_never_over_admit_the_pool(cast, pooled_server):
    # Quota is plenty in both trees (acme's vision and globex's globex-ml): the pool's physical
    # capacity binds, and it is shared by both cohorts, so only the flavor lock keeps them apart;
    # each decides on the capacity it last saw and must check it under that lock.
    catalog = make_catalog(cast, physical=1000, vision=1000, nlp=0)
    Queue.objects.create(tenant=cast.globex_ml, name="default")
    Quota.objects.create(tenant=cast.globex_ml, flavor=catalog.flavor, resource=GPU, nominal=1000)
    url = f"{pooled_server}/api/v1/capacity-requests/"
    for round_no in range(PHYSICAL_ROUNDS):
        token = issue_api_token(actor=cast.pat, name=f"race-{round_no}", scopes=["read", "write"]).plaintext
        room = 9 + 3 * round_no
        CapacityRequest.objects.all().delete()
        ShareableUnit.objects.filter(node__pool=catalog.pool).update(count=room)  # the pool has `room` GPUs
        barrier = threading.Barrier(CONCURRENT)
        tenants = ["vision", "globex-ml"] * (CONCURRENT // 2)
        with ThreadPoolExecutor(max_workers=CONCURRENT) as clients:
            futures = [clients.submit(post_request, url, token, barrier, tenant) for tenant in tenants]
            answers = [future.result() for future in futures]
        assert {status for status, _ in answers} == {201}, [a for a in answers if a[0] != 201][:3]
        assert [state for _, state in answers].count("admitted") == room, round_no
        assert CapacityRequest.objects.filter(state="admitted").count() == room
        assert (
            CapacityRequest.objects.filter(state="pending", reason_code="no_physical_fit").count()
            == CONCURRENT - room
        )


FALLBACK_ROUNDS = int(os.environ.get("ADMISSION_TEST_FALLBACK_ROUNDS", "5"))


def test_a_hundred_concurrent_requests_falling_back_across_flavors_admit_exactly_the_room_of_both(
    cast, pooled_server
):
    # Every request asks one GPU of "h100, else a100": vision's H100 quota fills first, then its A100
    # quota; what neither holds waits. Both flavors' locks are taken in one order by every decider.
    catalog = make_catalog(cast, physical=200, vision=0, nlp=0)
    a100_pool = inv.pool("a100-pool")
    give_capacity(a100_pool, 200)
    a100 = Flavor.objects.create(
        name="a100", pool=a100_pool, gpu_model="A100-80GB", resources=[{"name": GPU, "ge_per_unit": "1"}]
    )
    a100_quota = Quota.objects.create(tenant=cast.vision, flavor=a100, resource=GPU, nominal=0)
    url = f"{pooled_server}/api/v1/capacity-requests/"
    for round_no in range(FALLBACK_ROUNDS):
        token = issue_api_token(
            actor=cast.dana, name=f"fallback-{round_no}", scopes=["read", "write"]
        ).plaintext
        on_h100, on_a100 = 5 + round_no, 11 + 2 * round_no
        Quota.objects.filter(pk=catalog.vision_quota.pk).update(nominal=on_h100)
        Quota.objects.filter(pk=a100_quota.pk).update(nominal=on_a100)
        CapacityRequest.objects.all().delete()
        barrier = threading.Barrier(CONCURRENT)
        with ThreadPoolExecutor(max_workers=CONCURRENT) as clients:
            futures = [
                clients.submit(post_request, url, token, barrier, "vision", ["h100", "a100"])
                for _ in range(CONCURRENT)
            ]
            answers = [future.result() for future in futures]
        assert {status for status, _ in answers} == {201}, [a for a in answers if a[0] != 201][:3]
        assert [state for _, state in answers].count("admitted") == on_h100 + on_a100, round_no
        admitted = CapacityRequest.objects.filter(state="admitted")
        assert admitted.filter(flavor=catalog.flavor).count() == on_h100
        assert admitted.filter(flavor=a100).count() == on_a100
        assert CapacityRequest.objects.filter(state="pending").count() == CONCURRENT - on_h100 - on_a100
