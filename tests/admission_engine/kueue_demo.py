"""The demo's organisation (demo/seed.py, demo/capacity.py) on the demo's simulated cluster, as the
Kueue compiler's input: built from the demo's own tables and kubesim's "mixed" scenario, no database."""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

from demo.capacity import CLASSES, FLAVORS, QUOTAS
from demo.management.commands.demo import DEMO_NODES
from demo.seed import TREE
from inventory.models.clusters import DEFAULT_POOL_LABEL
from inventory.sync.nodes import base_product
from kubesim.scenarios import build
from quotas.kueue.model import (
    CompileInput,
    FlavorInput,
    NodeInput,
    PriorityClassInput,
    QueueInput,
    QuotaInput,
    ResourceInput,
    Taint,
    TenantInput,
)


def demo_nodes() -> tuple[NodeInput, ...]:
    nodes = []
    for obj in build("mixed", nodes=DEMO_NODES, seed=1).objects:
        if obj.get("kind") != "Node":
            continue
        labels = obj["metadata"].get("labels") or {}
        value = labels.get(DEFAULT_POOL_LABEL)
        nodes.append(
            NodeInput(
                name=obj["metadata"]["name"],
                pool=base_product(value) if value else None,
                labels=labels,
                taints=tuple(
                    Taint(key=t["key"], effect=t["effect"], value=t.get("value", ""))
                    for t in (obj.get("spec") or {}).get("taints") or []
                ),
            )
        )
    return tuple(nodes)


def demo_input(**changes: Any) -> CompileInput:
    nodes = demo_nodes()
    pools = {n.pool for n in nodes}
    flavors = tuple(
        FlavorInput(
            name=name,
            pool=pool,
            kind=kind,
            resources=tuple(ResourceInput(name=r, ge_per_unit=Fraction(ge)) for r, ge in resources),
            device_class=device_class,
        )
        for name, pool, kind, resources, device_class, _ in FLAVORS
        if pool in pools
    )
    first_resource = {f.name: f.resources[0].name for f in flavors}
    queues = [QueueInput(tenant=slug, name="default") for slug in QUOTAS]
    queues.append(QueueInput(tenant="vision", name="interactive", strategy="StrictFIFO"))
    spec = CompileInput(
        cluster="demo",
        pool_label=DEFAULT_POOL_LABEL,
        nodes=nodes,
        flavors=flavors,
        tenants=tuple(
            TenantInput(slug=slug, parent=parent, namespaces=tuple(namespaces))
            for slug, _, _, parent, namespaces in TREE
        ),
        quotas=tuple(
            QuotaInput(tenant=slug, flavor=flavor, resource=first_resource[flavor], nominal=nominal)
            for slug, nominals in QUOTAS.items()
            for flavor, nominal in nominals.items()
            if flavor in first_resource
        ),
        queues=tuple(queues),
        priority_classes=tuple(
            PriorityClassInput(name=name, value=value, preemptible=preemptible)
            for name, value, preemptible in CLASSES
        ),
    )
    return dataclasses.replace(spec, **changes)
