"""100 concurrent requests against room for N admit exactly N, every time (DESIGN section 10).

Each thread is its own database connection calling the submit service, as a web worker would; the
flavor and cohort advisory locks must serialise the decisions. PostgreSQL here allows 100 clients in
all (shared with other suites and xdist workers), so 12 workers carry the 100 requests: they start
together behind a barrier and keep 12 decisions in flight at every moment.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from tenants.models import CapacityRequest, Quota
from tenants.request_services import submit_request
from tests.tenants_admission.conftest import make_catalog

pytestmark = pytest.mark.django_db(transaction=True)

CONCURRENT = 100
WORKERS = int(os.environ.get("ADMISSION_TEST_WORKERS", "12"))
ROUNDS = int(os.environ.get("ADMISSION_TEST_ROUNDS", "20"))


def submit_in_own_connection(actor, barrier: threading.Barrier, started: set[int]) -> str:
    if threading.get_ident() not in started:
        started.add(threading.get_ident())
        barrier.wait()  # every worker connected and ready before the first decision
    try:
        return submit_request(actor=actor, tenant="vision", flavor="h100", amount=1).request.state
    finally:
        connection.close()  # never hold one of the server's scarce connections between requests


def test_a_hundred_concurrent_requests_never_over_admit(cast):
    catalog = make_catalog(cast, physical=200, vision=0, nlp=0)
    for round_no in range(ROUNDS):
        # given room for exactly n in vision's (and the whole tree's) quota
        room = 7 + round_no
        Quota.objects.filter(pk=catalog.vision_quota.pk).update(nominal=room)
        CapacityRequest.objects.all().delete()
        barrier, started = threading.Barrier(WORKERS), set()
        # when a hundred arrive at once
        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            futures = [
                pool.submit(submit_in_own_connection, cast.dana, barrier, started) for _ in range(CONCURRENT)
            ]
            states = [future.result() for future in futures]
        # then exactly n are admitted and the rest wait
        assert states.count("admitted") == room, (round_no, states.count("admitted"))
        assert CapacityRequest.objects.filter(state="admitted").count() == room
        assert (
            CapacityRequest.objects.filter(state="pending", reason_code="waiting_for_quota").count()
            == CONCURRENT - room
        )
