"""A claim whose device has binding conditions (KEP-5007) says so where its allocation is shown: the
allocations page, the node page's row for the claim and the API's allocation and claim rows, in plain
words, following the driver's status.devices[].conditions from waiting to ready."""

from __future__ import annotations

import copy

import pytest
from django.test import Client

from inventory.models import Allocation, ResourceClaim
from inventory.sync.runner import ClusterSync

pytestmark = pytest.mark.django_db

ATTACHED = "dra.example.com/fabric-attached"
FAILED = "dra.example.com/fabric-failed"


def _allocated_claim(sim) -> dict:
    for item in sim.store.list_readonly("resourceclaims"):
        results = (((item.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")
        if results and not results[0].get("adminAccess"):
            return copy.deepcopy(item)
    raise AssertionError("no allocated claim in the scenario")


def _page(user, namespace: str) -> str:
    client = Client()
    client.force_login(user)
    return client.get(f"/inventory/allocations/?open=true&namespace={namespace}").content.decode()


def test_a_claim_waiting_for_its_binding_condition_says_so_until_the_driver_sets_it(
    kubesim_factory, register, cast, api
):
    sim = kubesim_factory(scenario="dra", nodes=6, seed=2)
    cluster = register(sim)
    sync = ClusterSync(cluster, page_size=50)
    sync.full_sync()
    claim = _allocated_claim(sim)
    result = claim["status"]["allocation"]["devices"]["results"][0]
    result["bindingConditions"] = [ATTACHED]
    result["bindingFailureConditions"] = [FAILED]
    sim.store.update("resourceclaims", claim, subresource="status")
    sync.full_sync()

    waiting = f"waiting to bind: the device is not ready until {ATTACHED} is True"
    stored = ResourceClaim.objects.get(uid=claim["metadata"]["uid"])
    assert stored.results[0]["binding"] == waiting
    assert waiting in _page(cast.pat, claim["metadata"]["namespace"])
    held = Allocation.objects.get(
        holder_uid=claim["metadata"]["uid"], unit_key__endswith=f"/{result['device']}", ended_at__isnull=True
    )
    body = api(cast.pat).get(f"/api/v1/allocations/{held.pk}/").json()
    assert body["binding"] == waiting
    others = api(cast.pat).get("/api/v1/allocations/?page_size=200").json()["results"]
    assert sum(1 for row in others if row["binding"]) == 1  # only this claim's device has conditions

    claim = _allocated_claim_named(sim, claim)
    claim["status"]["devices"] = [
        {
            "driver": result["driver"],
            "pool": result["pool"],
            "device": result["device"],
            "conditions": [
                {
                    "type": ATTACHED,
                    "status": "True",
                    "reason": "Attached",
                    "message": "",
                    "lastTransitionTime": "2026-12-03T20:00:00Z",
                }
            ],
        }
    ]
    sim.store.update("resourceclaims", claim, subresource="status")
    sync.full_sync()
    page = _page(cast.pat, claim["metadata"]["namespace"])
    assert f"ready to bind: {ATTACHED} True" in page and waiting not in page


def _allocated_claim_named(sim, claim: dict) -> dict:
    meta = claim["metadata"]
    return copy.deepcopy(sim.store.get("resourceclaims", meta["namespace"], meta["name"]))


def test_the_node_page_says_it_on_the_claims_row_under_who_holds_what(kubesim_factory, register, cast):
    # given: a claim allocated a device on some node, its device waiting for a binding condition
    sim = kubesim_factory(scenario="dra", nodes=6, seed=2)
    cluster = register(sim)
    sync = ClusterSync(cluster, page_size=50)
    sync.full_sync()
    claim = _allocated_claim(sim)
    result = claim["status"]["allocation"]["devices"]["results"][0]
    result["bindingConditions"] = [ATTACHED]
    sim.store.update("resourceclaims", claim, subresource="status")
    # when: the sync reads it
    sync.full_sync()
    # then: the node page's row for that claim's unit says so, in the allocations page's words, once
    held = Allocation.objects.select_related("node").get(
        holder_uid=claim["metadata"]["uid"], unit_key__endswith=f"/{result['device']}", ended_at__isnull=True
    )
    assert held.node is not None
    client = Client()
    client.force_login(cast.pat)
    page = client.get(f"/inventory/nodes/{held.node.pk}/").content.decode()
    waiting = f"waiting to bind: the device is not ready until {ATTACHED} is True"
    holder = f"{claim['metadata']['namespace']}/{claim['metadata']['name']}"
    assert page.count(waiting) == 1
    row = next(line for line in page.split("<li ") if waiting in line)
    assert holder in row
    # and no other row on the page speaks of binding
    assert page.count('data-testid="binding"') == 1
