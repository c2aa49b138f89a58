"""What is left free of a card several holders share, in words on the node page: of a DRA device with
one capacity (KEP-5075) the amount ("20Gi of 80Gi memory"), of one with several the part of the card
as the shares' GE count it, of a HAMi card its memory and tasks. Numbers worked out by hand."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from inventory.models import Allocation, Gpu, Node, ShareableUnit
from inventory.node_layout import node_layout
from tests.inventory import factories as inv

pytestmark = pytest.mark.django_db

GI = 2**30


def _card(name: str, **unit: object) -> tuple[Node, ShareableUnit]:
    node = inv.node(name)
    gpu = Gpu.objects.create(
        node=node, index=0, product=node.product, model_key="H100-80GB", memory_mib=81920
    )
    fields: dict = {
        "cluster": node.cluster,
        "node": node,
        "resource_name": "gpu.nvidia.com",
        "ge_each": Decimal(1),
        "model_key": "H100-80GB",
        **unit,
    }
    if fields["kind"] == "hami_gpu":
        fields["gpu"] = gpu
    else:
        fields["attributes"] = {"type": "gpu", "index": 0}
    return node, ShareableUnit.objects.create(**fields)


def _hold(unit: ShareableUnit, tenant, name: str, ge: str, **details: object) -> None:
    assert unit.node is not None
    Allocation.objects.create(
        cluster=unit.cluster,
        tenant=tenant,
        namespace="team-vision",
        holder_kind="Pod" if unit.kind == "hami_gpu" else "ResourceClaim",
        holder_name=name,
        holder_uid=f"uid-{name}",
        unit=unit,
        unit_key=unit.key.split("@", 1)[0],
        resource_name=unit.resource_name,
        count=1,
        ge=Decimal(ge),
        model_key="H100-80GB",
        node=unit.node,
        node_name=unit.node.name,
        pool=unit.node.pool,
        started_at=timezone.now() - timedelta(hours=1),
        details=details,
    )


def _free(node: Node) -> list[str]:
    (card,) = node_layout(node=node).cards
    return [b.holder for b in card.blocks if b.label == "free"]


def _memory_policy(top: int, minimum: str) -> dict:
    return {
        "value": str(top),
        "default": None,
        "values": [],
        "min": minimum,
        "max": str(top),
        "step": str(2**20),
    }


def test_a_device_with_one_capacity_says_how_much_of_it_its_shares_leave(cast):
    node, unit = _card(
        "gpu-memory-0",
        kind="dra_device",
        key="dra/gpu.nvidia.com/gpu-memory-0/gpu-0@s",
        shared_capacity={"memory": _memory_policy(80 * GI, str(2**20))},
    )
    assert _free(node) == ["80Gi of 80Gi memory"]  # no share yet
    _hold(unit, cast.vision, "a-notebook", "0.25")  # 20Gi of 80Gi
    _hold(unit, cast.vision, "b-notebook", "0.5")  # 40Gi of 80Gi
    assert _free(node) == ["20Gi of 80Gi memory"]  # 80 - 20 - 40

    browser = Client()
    browser.force_login(cast.pat)
    text = browser.get(reverse("inventory-node", args=[node.pk])).content.decode()
    assert "free: 20Gi of 80Gi memory" in text and "free: free" not in text


def test_a_device_with_shares_and_memory_says_the_part_of_the_card_left(cast):
    node, unit = _card(
        "gpu-shares-0",
        kind="dra_device",
        key="dra/gpu.nvidia.com/gpu-shares-0/gpu-0@s",
        shared_capacity={
            "memory": _memory_policy(80 * GI, "0"),
            "shares": {"value": "4", "default": "1", "values": [], "min": "1", "max": "4", "step": "1"},
        },
    )
    assert _free(node) == ["all of the card"]
    _hold(unit, cast.vision, "s-0", "0.25")  # one share of 4, no memory: max(1/4, 0)
    assert _free(node) == ["3/4 of the card"]
    _hold(unit, cast.vision, "s-1", "0.375")  # 30Gi and one share: max(30/80, 1/4) = 3/8
    assert _free(node) == ["3/8 of the card"]  # 1 - 1/4 - 3/8
    _hold(unit, cast.vision, "s-2", "0.2875")  # 23Gi and one share: max(23/80, 1/4) = 0.2875
    # 3/8 - 23/80 = 7/80, no fraction of a denominator up to 64: in percent, 8.75 rounded
    assert _free(node) == ["about 9% of the card"]


def test_a_hami_card_says_the_memory_and_tasks_its_shares_leave(cast):
    node, unit = _card(
        "gpu-hami-0",
        kind="hami_gpu",
        key="node/gpu-hami-0/nvidia.com/gpu/0/-/0",
        memory_mib=81920,
        split_count=10,
        device_uuid="GPU-0000",
    )
    assert _free(node) == ["80Gi of 80Gi memory, 10 of 10 tasks"]
    _hold(unit, cast.vision, "pod-a", "0.25", memory_mib=20480, cores=0)
    _hold(unit, cast.vision, "pod-b", "0.3", memory_mib=10240, cores=30)
    # 81920 - 20480 - 10240 = 51200 MiB = 50Gi; 10 - 2 tasks
    assert _free(node) == ["50Gi of 80Gi memory, 8 of 10 tasks"]
