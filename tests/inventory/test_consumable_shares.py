"""A GPU its DRA driver shares between claims (allowMultipleAllocations, KEP-5075; the NVIDIA driver's
ConsumableShares): each claim holds the part of the card it consumes, not the card. 20Gi of an 80Gi
H100 is 1/4 GE; 1.5Mi is outside the 1Mi-step request policy: flagged on the claim, still counted."""

from __future__ import annotations

import copy
from decimal import Decimal

import pytest

from inventory.models import Allocation, ParseIssueCount, ShareableUnit
from inventory.sync.runner import ClusterSync

pytestmark = pytest.mark.django_db


def _claim(name: str, unit: ShareableUnit, memory: str, share: str) -> tuple[dict, dict]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "team-vision"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": "gpu.nvidia.com",
                            "capacity": {"requests": {"memory": memory}},
                        },
                    }
                ]
            }
        },
    }, {
        "allocation": {
            "devices": {
                "results": [
                    {
                        "request": "gpu",
                        "driver": unit.driver,
                        "pool": unit.pool_name,
                        "device": unit.device_name,
                        "shareID": share,
                        "consumedCapacity": {"memory": memory},
                    }
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [unit.node.name]}]}
                ]
            },
        }
    }


def test_each_share_of_a_shared_gpu_holds_what_it_consumes(kubesim_factory, register):
    sim = kubesim_factory(scenario="dra", nodes=6, seed=2)
    cluster = register(sim)
    ClusterSync(cluster, page_size=50).full_sync()
    held = set(
        Allocation.objects.filter(cluster=cluster, ended_at__isnull=True).values_list("unit_id", flat=True)
    )
    unit = (
        ShareableUnit.objects.filter(
            cluster=cluster, kind="dra_device", attributes__type="gpu", node__name__contains="h100-dra"
        )
        .exclude(pk__in=held)
        .select_related("node", "resource_slice")
        .order_by("key")
        .first()
    )
    obj = copy.deepcopy(sim.store.get("resourceslices", None, unit.resource_slice.name))
    for device in obj["spec"]["devices"]:
        if device["name"] == unit.device_name:
            device["allowMultipleAllocations"] = True
            device["capacity"]["memory"] = {
                "value": "80Gi",
                "requestPolicy": {
                    "default": "80Gi",
                    "validRange": {"min": "1Mi", "max": "80Gi", "step": "1Mi"},
                },
            }
    sim.store.update("resourceslices", obj)
    for name, memory, share in (("notebook", "20Gi", "s-1"), ("odd", "1536Ki", "s-2")):
        claim, status = _claim(name, unit, memory, share)
        created = sim.store.create("resourceclaims", claim)
        created["status"] = status
        sim.store.update("resourceclaims", created, subresource="status")
    ClusterSync(cluster, page_size=50).full_sync()

    stored = ShareableUnit.objects.get(cluster=cluster, key=unit.key)
    assert stored.shared_capacity["memory"]["value"] == str(80 * 1024**3)
    ge = dict(
        Allocation.objects.filter(
            cluster=cluster, ended_at__isnull=True, holder_name__in=["notebook", "odd"]
        ).values_list("holder_name", "ge")
    )
    # 20Gi / 80Gi = 1/4; 1.5Mi / 81920Mi = 3/163840 = 0.000018310546875
    assert ge == {"notebook": Decimal("0.25"), "odd": Decimal("0.000018310546875")}
    issue = ParseIssueCount.objects.get(cluster=cluster, code="dra.capacity.outside_policy")
    assert issue.last_object == "team-vision/odd" and "memory=1572864" in issue.last_message
