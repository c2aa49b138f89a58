"""The demo seeds a catalogue from the demo cluster's pools and requests in every state, and the
printed tokens can request capacity at once."""

from __future__ import annotations

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from demo.capacity import seed_demo_capacity
from demo.seed import seed_demo_cluster, seed_demo_organisation
from inventory.sync.service import sync_cluster
from quotas.models import CapacityRequest, Flavor

pytestmark = pytest.mark.django_db


def test_the_demo_has_requests_in_every_state_and_tokens_that_can_ask(kubesim_factory, time_machine):
    # The demo's month-long request is over its 1 GE-hour budget only while the month has hours left:
    # seed it mid-month, not in whatever hour the suite happens to run.
    time_machine.move_to(timezone.now().replace(day=15, hour=12))
    credentials = seed_demo_organisation()
    sim = kubesim_factory(scenario="mixed", nodes=24, seed=1)
    cluster = seed_demo_cluster(kubeconfig=sim.kubeconfig_path.read_text())
    sync_cluster(cluster_id=cluster.pk)
    assert seed_demo_capacity(cluster=cluster) is True
    assert seed_demo_capacity(cluster=cluster) is False  # idempotent
    assert {"h100", "h100-dra", "t4-shared"} <= set(Flavor.objects.values_list("name", flat=True))
    states = set(CapacityRequest.objects.values_list("state", flat=True))
    assert {"admitted", "pending", "released", "expired", "rejected", "cancelled", "preempted"} <= states
    reasons = set(CapacityRequest.objects.filter(state="pending").values_list("reason_code", flat=True))
    assert {"waiting_for_quota", "awaiting_approval", "over_budget"} <= reasons
    alice = APIClient()
    alice.credentials(HTTP_AUTHORIZATION=f"Bearer {next(iter(credentials.tokens.values()))}")
    response = alice.post(
        "/api/v1/capacity-requests/", {"tenant": "vision", "flavor": "h100-dra", "amount": 1}, format="json"
    )
    assert response.status_code == 201 and response.json()["state"] == "admitted"
