"""A small fleet with one of each sharing mechanism, and allocations over one hour, for the
metering tests. The figures each test expects are worked out by hand beside it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from inventory.crypto import encrypt_text
from inventory.models import Allocation, Cluster, Gpu, Node, NodePool
from quotas.models import Flavor

HOUR = datetime(2025, 3, 10, 10, tzinfo=UTC)


def at(minutes: int) -> datetime:
    return HOUR + timedelta(minutes=minutes)


@dataclass
class Fleet:
    cluster: Cluster
    pools: dict[str, NodePool]
    nodes: dict[str, Node]
    gpus: dict[str, Gpu]
    allocations: dict[str, Allocation] = field(default_factory=dict)


def build_fleet() -> Fleet:
    cluster = Cluster.objects.create(
        name="east", api_endpoint="https://east.example:6443", kubeconfig_encrypted=encrypt_text("x")
    )
    pools, nodes, gpus = {}, {}, {}
    for name, model, cards in (
        ("h100", "H100-80GB", 2),  # whole GPUs, device plugin: the card is not reported
        ("h100-mig", "H100-80GB", 1),  # MIG mixed: the card is known
        ("h100-hami", "H100-80GB", 1),  # HAMi: the card is known
        ("t4-ts", "T4", 1),  # time-slicing, 4 replicas
        ("t4-mps", "T4", 1),  # MPS, 10 replicas
    ):
        pools[name] = NodePool.objects.create(cluster=cluster, name=name)
        nodes[name] = Node.objects.create(
            cluster=cluster, pool=pools[name], name=f"{name}-0", model_key=model, gpu_count=cards
        )
        gpus[name] = Gpu.objects.create(node=nodes[name], index=0, model_key=model)
    Flavor.objects.create(
        name="h100",
        pool=pools["h100"],
        gpu_model="H100-80GB",
        resources=[{"name": "nvidia.com/gpu", "ge_per_unit": "1"}],
    )
    return Fleet(cluster, pools, nodes, gpus)


def hold(
    fleet: Fleet,
    *,
    tenant,
    pool: str,
    name: str,
    ge: str,
    start: datetime,
    end: datetime | None,
    on_card: bool = False,
    resource: str = "nvidia.com/gpu",
) -> Allocation:
    node = fleet.nodes[pool]
    return Allocation.objects.create(
        cluster=fleet.cluster,
        tenant=tenant,
        namespace=f"team-{tenant.slug}" if tenant else "stray",
        holder_kind="Pod",
        holder_name=name,
        holder_uid=f"uid-{name}",
        unit_key=f"{pool}/{name}",
        resource_name=resource,
        ge=Decimal(ge),
        model_key=node.model_key,
        node=node,
        node_name=node.name,
        pool=fleet.pools[pool],
        gpu=fleet.gpus[pool] if on_card else None,
        started_at=start,
        ended_at=end,
    )


def the_hour(fleet: Fleet, cast) -> dict[str, Allocation]:
    """The allocations of 10:00-11:00 on 2025-03-10 (charged card-hours worked by hand):

    h100 (2 cards, card unknown): vision 1 GPU all hour -> 1; nlp 1 GPU 10:00-10:30 -> 0.5; idle 0.5.
    h100-mig (1 card): vision 2 x 1g.20gb (1/4 each) all hour -> 0.5; nlp 3g.40gb (1/2) 10:00-10:45
      -> 0.375; idle 0.125.
    h100-hami (1 card): vision 25% share all hour -> 0.25; nlp half-card share 10:10-10:30 -> 1/6
      (0.166666667 stored, the rounding kept so the node sums); idle 0.583333333.
    t4-ts (4 replicas): vision 2 replicas (1/2) all hour -> 0.5; nlp 1 replica 10:40-11:00 -> 1/12
      (0.083333333); idle 0.416666667.
    t4-mps (10 replicas): vision 1 replica all hour -> 0.1; idle 0.9.
    """
    v, n = cast.vision, cast.nlp
    return {
        "v-h100": hold(fleet, tenant=v, pool="h100", name="v-h100", ge="1", start=at(-30), end=None),
        "n-h100": hold(fleet, tenant=n, pool="h100", name="n-h100", ge="1", start=at(0), end=at(30)),
        "v-mig-a": hold(
            fleet, tenant=v, pool="h100-mig", name="v-mig-a", ge="0.25", start=at(-60), end=None, on_card=True
        ),
        "v-mig-b": hold(
            fleet, tenant=v, pool="h100-mig", name="v-mig-b", ge="0.25", start=at(-60), end=None, on_card=True
        ),
        "n-mig": hold(
            fleet, tenant=n, pool="h100-mig", name="n-mig", ge="0.5", start=at(-5), end=at(45), on_card=True
        ),
        "v-hami": hold(
            fleet,
            tenant=v,
            pool="h100-hami",
            name="v-hami",
            ge="0.25",
            start=at(-60),
            end=at(90),
            on_card=True,
        ),
        "n-hami": hold(
            fleet, tenant=n, pool="h100-hami", name="n-hami", ge="0.5", start=at(10), end=at(30), on_card=True
        ),
        "v-ts": hold(fleet, tenant=v, pool="t4-ts", name="v-ts", ge="0.5", start=at(-60), end=None),
        "n-ts": hold(fleet, tenant=n, pool="t4-ts", name="n-ts", ge="0.25", start=at(40), end=at(75)),
        "v-mps": hold(fleet, tenant=v, pool="t4-mps", name="v-mps", ge="0.1", start=at(0), end=at(60)),
    }
