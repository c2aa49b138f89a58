"""Heartbeats (gpuplatform/health): a loop's last success, written at most once per few seconds, and
judged stale after three of its intervals on /readyz and the overview. The loop is the admission
loop itself, run as beat runs it; the clock is moved, not waited for."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.test import Client

from gpuplatform.health.models import Heartbeat
from quotas.runner.loop import run_admission_loop

pytestmark = pytest.mark.django_db

T = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _beat_at() -> datetime:
    return Heartbeat.objects.get(name="quotas.admission_loop").beat_at


def test_a_loop_writes_its_heartbeat_at_most_once_every_5_seconds():
    with time_machine.travel(T, tick=False):
        run_admission_loop()
    assert _beat_at() == T
    with time_machine.travel(T + timedelta(seconds=4), tick=False):
        run_admission_loop()
    assert _beat_at() == T  # nothing written: the last beat is 4 s old
    with time_machine.travel(T + timedelta(seconds=6), tick=False):
        run_admission_loop()
    assert _beat_at() == T + timedelta(seconds=6)


def test_the_admission_loop_is_stale_after_three_of_its_30_s_intervals(cast, settings):
    settings.ADMISSION_LOOP_SECONDS = 30.0
    with time_machine.travel(T, tick=False):
        run_admission_loop()
    client = Client()
    client.force_login(cast.pat)

    with time_machine.travel(T + timedelta(seconds=90), tick=False):
        assert client.get("/readyz").json()["status"] == "ok"
        assert "loops-stale" not in client.get("/").content.decode()

    with time_machine.travel(T + timedelta(seconds=91), tick=False):
        response = client.get("/readyz")
        assert response.status_code == 200
        assert response.json()["status"] == "degraded"
        assert response.json()["loops"] == {
            "count": 1,
            "stale": [
                {
                    "name": "quotas.admission_loop",
                    "last_success": "2026-03-02T09:00:00+00:00",
                    "stale_after_seconds": 90.0,
                }
            ],
        }
        html = re.sub(r"\s+", " ", client.get("/").content.decode())
        assert (
            '<a href="/queues/"><strong>1 loop stale</strong></a> — Admission loop: no success since '
            "2026-03-02 09:00 UTC" in html
        )
        metrics = client.get("/metrics").content.decode()
        assert 'gpuplatform_loop_stale{loop="quotas.admission_loop"} 1.0' in metrics

    # beat runs it again: fresh, and the overview has nothing to say of it
    with time_machine.travel(T + timedelta(seconds=120), tick=False):
        run_admission_loop()
        assert client.get("/readyz").json()["status"] == "ok"
