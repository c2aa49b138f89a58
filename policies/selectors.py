"""Reads the compiler needs from inventory: a pool as plain data."""

from __future__ import annotations

from collections import defaultdict

from inventory.models import Node, NodePool
from policies.compiler import ModelCards, PoolSpec, SharingMode, SharingSpec, normalise_parameters
from policies.models import SharingPolicy


def pool_spec(*, pool: NodePool) -> PoolSpec:
    """The pool's GPU models with their cards and nodes, from the present nodes (one query)."""
    cards: dict[str, int] = defaultdict(int)
    nodes: dict[str, int] = defaultdict(int)
    names: list[str] = []
    rows = Node.objects.filter(pool=pool, present=True).values_list("name", "model_key", "gpu_count")
    for name, model_key, gpu_count in rows:
        names.append(name)
        if model_key and gpu_count:
            cards[model_key] += gpu_count
            nodes[model_key] += 1
    return PoolSpec(
        cluster=pool.cluster.name,
        name=pool.name,
        models=tuple(ModelCards(key, cards[key], nodes[key]) for key in sorted(cards)),
        node_names=tuple(sorted(names)),
    )


def sharing_spec(policy: SharingPolicy) -> SharingSpec:
    mode = SharingMode(policy.mode)
    return SharingSpec(
        mode=mode,
        parameters=normalise_parameters(mode, policy.parameters),
        resource_name=policy.resource_name,
    )
