"""A pool's physical capacity is cached until a unit, or a node's pool or presence, changes."""

from __future__ import annotations

import pytest

from inventory.models import Node
from inventory.selectors import cached_pool_resource_capacity
from tests.inventory import factories as inv

pytestmark = pytest.mark.django_db
GPU = "nvidia.com/gpu"


def gpus_in(pool):
    return cached_pool_resource_capacity(pool_ids=[pool.pk])[pool.pk].get(GPU, 0)


def test_cached_until_capacity_moves(django_assert_num_queries):
    h100, spare = inv.pool("h100"), inv.pool("spare")
    first, second = inv.node("gpu-0", in_pool=h100), inv.node("gpu-1", in_pool=h100)
    inv.whole_gpus(first, 8)
    assert gpus_in(h100) == 8
    with django_assert_num_queries(1):  # the stamp alone
        assert gpus_in(h100) == 8
    # a node rewritten without moving (a label changed) keeps the cache
    Node.objects.filter(pk=first.pk).update(labels={"team": "vision"})
    with django_assert_num_queries(1):
        assert gpus_in(h100) == 8
    inv.whole_gpus(second, 4)  # a unit appears
    assert gpus_in(h100) == 12
    Node.objects.filter(pk=second.pk).update(present=False)  # a node goes
    assert gpus_in(h100) == 8
    Node.objects.filter(pk=first.pk).update(pool=spare)  # a node moves to another pool
    assert gpus_in(h100) == 0
    assert gpus_in(spare) == 8
