"""A small catalogue over the cast: one H100 flavor with physical room, two priority classes,
quotas for vision and nlp under research, and a default queue per team."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from inventory.models import Node, NodePool
from quotas.models import Flavor, PriorityClass, Queue, Quota
from tests.inventory import factories as inv

GPU = "nvidia.com/gpu"


@dataclass
class Catalog:
    flavor: Flavor
    pool: NodePool
    low: PriorityClass
    high: PriorityClass
    vision_queue: Queue
    nlp_queue: Queue
    vision_quota: Quota
    nlp_quota: Quota


def give_capacity(pool: NodePool, units: int) -> None:
    """Physical capacity: one node in the pool advertising ``units`` whole GPUs."""
    node = Node.objects.create(
        cluster=pool.cluster, pool=pool, name=f"{pool.name}-node", model_key="H100-80GB", gpu_count=units
    )
    inv.whole_gpus(node, units)


def make_catalog(cast: Any, *, physical: int = 16, vision: int = 4, nlp: int = 4) -> Catalog:
    pool = inv.pool("h100-pool")
    give_capacity(pool, physical)
    flavor = Flavor.objects.create(
        name="h100", pool=pool, gpu_model="H100-80GB", resources=[{"name": GPU, "ge_per_unit": "1"}]
    )
    return Catalog(
        flavor=flavor,
        pool=pool,
        low=PriorityClass.objects.create(name="batch", value=100),
        high=PriorityClass.objects.create(name="prod", value=1000, preemptible=False),
        vision_queue=Queue.objects.create(tenant=cast.vision, name="default"),
        nlp_queue=Queue.objects.create(tenant=cast.nlp, name="default"),
        vision_quota=Quota.objects.create(tenant=cast.vision, flavor=flavor, resource=GPU, nominal=vision),
        nlp_quota=Quota.objects.create(tenant=cast.nlp, flavor=flavor, resource=GPU, nominal=nlp),
    )


@pytest.fixture
def catalog(cast: Any) -> Catalog:
    return make_catalog(cast)
