"""The demo's admission loop (issue 11, defect 3): what beat runs in production, run by a thread in
the process, so a request whose duration is over ends and the requests waiting behind it are decided
again, without anyone calling the loop."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from quotas.models import CapacityRequest, Quota
from quotas.runner.loop import keep_admitting

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/api/v1/capacity-requests/"


def _wait_for(condition, seconds=15.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_the_loop_thread_expires_an_ended_request_and_admits_the_one_waiting_behind_it(cast, api, catalog):
    # given: the tree holds exactly vision's 4 GPUs, all taken by a one-minute request, and 2 waiting
    Quota.objects.filter(tenant=cast.nlp).update(nominal=0)
    alice = api(cast.alice)
    body = {"flavor": "h100", "priority_class": "prod", "tenant": "vision"}
    holder = alice.post(URL, {**body, "amount": 4, "duration_seconds": 60}, format="json").json()
    waiting = alice.post(URL, {**body, "amount": 2}, format="json").json()
    assert (holder["state"], waiting["state"]) == ("admitted", "pending")
    # ...and the minute is over (the clock moved on while nobody called anything)
    CapacityRequest.objects.filter(pk=holder["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))

    # when: the thread the demo starts runs on its own
    stop = threading.Event()
    thread = threading.Thread(target=keep_admitting, kwargs={"stop": stop, "interval_seconds": 0.05})
    thread.start()
    try:
        admitted = _wait_for(lambda: CapacityRequest.objects.get(pk=waiting["id"]).state == "admitted")
    finally:
        stop.set()
        thread.join(timeout=10)

    # then
    assert admitted
    assert alice.get(f"{URL}{holder['id']}/").json()["state"] == "expired"
    now_admitted = alice.get(f"{URL}{waiting['id']}/").json()
    assert now_admitted["message"] != waiting["message"]  # the wait's explanation did not go stale
    assert not thread.is_alive()
