"""A claim's holding starts when the cluster recorded its allocation being written, not when we saw it.

The API server keeps, per manager, the time of its last write (metadata.managedFields[].time); the
entry on the status subresource that owns status.allocation is the allocation's write (the scheduler's).
Without it, a list's creation time is the best the cluster says, and a watch event's moment the last
resort; each allocation row says which it used.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from kubernetes import client

from inventory.models import Allocation
from inventory.sync.runner import ClusterSync

pytestmark = pytest.mark.django_db

WRITTEN = "2026-11-30T08:15:00Z"


def allocated_claims(sim) -> list[dict]:
    api = client.ResourceV1Api(sim.api_client())
    items = json.loads(api.list_resource_claim_for_all_namespaces(_preload_content=False).data)["items"]
    return [c for c in items if (c.get("status") or {}).get("allocation")]


def test_a_claims_allocation_starts_when_the_cluster_wrote_it(kubesim_factory, register, mapped):
    # given a cluster where the scheduler's status write of one claim's allocation is recorded at 08:15
    sim = kubesim_factory(scenario="mixed", nodes=20, seed=1)
    recorded, plain = allocated_claims(sim)[:2]
    recorded["metadata"]["creationTimestamp"] = "2026-11-30T08:00:00Z"
    recorded["metadata"]["managedFields"] = [
        {
            "manager": "kube-scheduler",
            "operation": "Update",
            "apiVersion": "resource.k8s.io/v1",
            "time": WRITTEN,
            "fieldsType": "FieldsV1",
            "subresource": "status",
            "fieldsV1": {"f:status": {"f:allocation": {".": {}}, "f:reservedFor": {}}},
        }
    ]
    sim.store.bulk_load([recorded])

    # when the inventory is synced cold
    ClusterSync(register(sim), page_size=100).full_sync()

    # then that claim's rows start at 08:15 (not its creation at 08:00), and say so
    rows = list(Allocation.objects.filter(holder_uid=recorded["metadata"]["uid"]))
    assert rows and {(r.started_at, r.details["started_from"]) for r in rows} == {
        (datetime(2026, 11, 30, 8, 15, tzinfo=UTC), "allocation_written")
    }
    # and a claim whose allocation write is not recorded starts at its creation, marked as such
    others = list(Allocation.objects.filter(holder_uid=plain["metadata"]["uid"]))
    created = datetime.fromisoformat(plain["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    assert others and {(r.started_at, r.details["started_from"]) for r in others} == {
        (created, "claim_created")
    }
