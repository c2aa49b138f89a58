"""A claim allocated from a slice generation that is gone (issue 30, "Bad input"): flagged on the claim
and counted in the cluster's parse issues once, however many resyncs find it again; held at 0 GE."""

from __future__ import annotations

from decimal import Decimal

import pytest

from inventory.models import Allocation, ParseIssueCount, ResourceClaim
from inventory.sync.runner import ClusterSync
from kubesim.scenarios import build

pytestmark = pytest.mark.django_db

GONE = "gpu.nvidia.com/gpu-h100-dra-shares-memory-0000/gpu-9: allocated from a slice generation that is gone"


def test_a_claim_on_a_device_no_slice_has_is_flagged_once_and_holds_nothing(kubesim_factory, register):
    built = build("consumable-capacity", nodes=2, seed=4, pods_per_node=0, claims_per_node=0, gpus_per_node=2)
    sim = kubesim_factory()
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "stale", "namespace": "team-vision", "uid": "uid-stale"},
        "spec": {
            "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}
        },
        # the node's pool has gpu-0 and gpu-1 only: gpu-9 was in a generation the driver replaced
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "gpu",
                            "driver": "gpu.nvidia.com",
                            "pool": "gpu-h100-dra-shares-memory-0000",
                            "device": "gpu-9",
                        }
                    ]
                }
            }
        },
    }
    sim.store.bulk_load([*built.objects, claim])
    cluster = register(sim)

    for _ in range(3):
        ClusterSync(cluster, page_size=50).full_sync()

    stale = ResourceClaim.objects.get(cluster=cluster, name="stale")
    assert [(i["code"], i["message"]) for i in stale.issues] == [("dra.claim.unknown_device", GONE)]
    counted = ParseIssueCount.objects.get(
        cluster=cluster, kind="resourceclaims", code="dra.claim.unknown_device"
    )
    assert (counted.count, counted.last_object, counted.last_message) == (1, "team-vision/stale", GONE)
    assert Allocation.objects.get(cluster=cluster, holder_name="stale").ge == Decimal(0)


def test_what_reading_a_claim_finds_is_kept_on_it_and_counted_once(kubesim_factory, register):
    built = build("consumable-capacity", nodes=1, seed=4, pods_per_node=0, claims_per_node=0, gpus_per_node=2)
    sim = kubesim_factory()
    odd = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "odd", "namespace": "team-vision", "uid": "uid-odd"},
        # a firstAvailable list with no alternative: nothing could ever be allocated for it
        "spec": {"devices": {"requests": [{"name": "gpu", "firstAvailable": []}]}},
    }
    sim.store.bulk_load([*built.objects, odd])
    cluster = register(sim)

    for _ in range(3):
        ClusterSync(cluster, page_size=50).full_sync()

    stored = ResourceClaim.objects.get(cluster=cluster, name="odd")
    assert [(i["code"], i["message"]) for i in stored.issues] == [("dra.claim.empty_first_available", "gpu")]
    counted = ParseIssueCount.objects.get(
        cluster=cluster, kind="resourceclaims", code="dra.claim.empty_first_available"
    )
    assert (counted.count, counted.last_object) == (1, "team-vision/odd")
