"""A flavor's capacity never exceeds what a node's cards hold, whatever the node advertises."""

from __future__ import annotations

from decimal import Decimal

import pytest

from inventory.models import Gpu, ShareableUnit
from inventory.selectors import pool_resource_capacity
from tests.inventory import factories as inv

pytestmark = pytest.mark.django_db


def advertise(node, resource: str, count: int, ge_each: str, kind: str = "mig") -> None:
    ShareableUnit.objects.create(
        cluster=node.cluster,
        node=node,
        key=f"node/{node.name}/{resource}",
        kind=kind,
        resource_name=resource,
        count=count,
        ge_each=Decimal(ge_each),
        model_key="H100-80GB",
    )


def test_a_node_advertising_more_instances_than_its_card_holds_offers_only_what_fits(cast):
    # given one H100 card advertising 9 x 1g.10gb (a stale device-plugin view: 7 fit, 1/7 GE each)
    node = inv.node("gpu-0")
    Gpu.objects.create(node=node, index=0, product=node.product, model_key="H100-80GB", memory_mib=81559)
    advertise(node, "nvidia.com/mig-1g.10gb", 9, "0.142857")
    # and a second node with two cards advertising 3 whole GPUs
    other = inv.node("gpu-1")
    for index in range(2):
        Gpu.objects.create(
            node=other, index=index, product=other.product, model_key="H100-80GB", memory_mib=81559
        )
    inv.whole_gpus(other, 3)

    assert node.pool_id is not None
    capacity = pool_resource_capacity(pool_ids=[node.pool_id])[node.pool_id]

    # then 7 instances (1 card / (1/7)) and 2 whole GPUs (2 cards / 1) are offered, not 9 and 3
    assert capacity == {"nvidia.com/mig-1g.10gb": 7, "nvidia.com/gpu": 2}


def test_a_node_whose_advertised_units_fit_its_cards_offers_them_all(cast):
    node = inv.node("gpu-0")
    for index in range(2):
        Gpu.objects.create(
            node=node, index=index, product=node.product, model_key="H100-80GB", memory_mib=81559
        )
    advertise(node, "nvidia.com/mig-3g.40gb", 4, "0.5")

    assert node.pool_id is not None
    assert pool_resource_capacity(pool_ids=[node.pool_id])[node.pool_id] == {"nvidia.com/mig-3g.40gb": 4}
