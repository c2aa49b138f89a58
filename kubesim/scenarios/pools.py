"""Node pools of each scenario: which GPU model, which sharing mechanism, and what share of the nodes."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class PoolSpec:
    name: str  # also the `gpuplatform.io/node-pool` label value and the node name stem
    mechanism: str  # exclusive | mig-mixed | mig-single | time-slicing | mps | hami | dra
    model: str  # GpuModel.key
    weight: float  # share of the scenario's nodes
    mig_config: str = "all-disabled"  # nvidia.com/mig.config of MIG-capable models
    device_plugin_config: str | None = None  # nvidia.com/device-plugin.config key
    # gpu (whole GPUs) | mig (static MIG devices) | partitionable (counters) | shares-memory, shares-4
    # (whole GPUs shared by several claims, KEP-5075; kubesim/scenarios/dra.py SHARE_MODES)
    dra_mode: str = "gpu"
    max_nodes: int | None = None  # cap, for pools whose objects are large (partitionable slices)
    tainted: bool = True  # nvidia.com/gpu=present:NoSchedule, as GKE and many operators set it
    # Nodes per NVLink clique (nvidia.com/gpu.clique, one NVLink domain per pool); 0 = no fabric.
    nodes_per_clique: int = 0


EXCLUSIVE = (
    PoolSpec("h100-exclusive", "exclusive", "H100-80GB-HBM3", 0.5),
    PoolSpec("l40s-exclusive", "exclusive", "L40S", 0.3, tainted=False),
    PoolSpec("a100-80-exclusive", "exclusive", "A100-80GB-PCIe", 0.2),
)
MIG_MIXED = (
    PoolSpec("h100-mig-balanced", "mig-mixed", "H100-80GB-HBM3", 0.5, "all-balanced", "mixed"),
    PoolSpec("h200-mig-balanced", "mig-mixed", "H200", 0.3, "all-balanced", "mixed"),
    PoolSpec("a100-80-mig-custom", "mig-mixed", "A100-80GB-PCIe", 0.2, "2g-2g-2g-1g-and-4g-3g", "mixed"),
)
MIG_SINGLE = (
    PoolSpec("a100-40-mig-1g", "mig-single", "A100-SXM4-40GB", 0.5, "all-1g.5gb", "single"),
    PoolSpec("h100-mig-3g", "mig-single", "H100-80GB-HBM3", 0.5, "all-3g.40gb", "single"),
)
TIME_SLICING = (
    PoolSpec("t4-timeslicing", "time-slicing", "T4", 0.6, device_plugin_config="tesla-t4", tainted=False),
    PoolSpec("l40s-timeslicing", "time-slicing", "L40S", 0.2, device_plugin_config="l40s"),
    PoolSpec("t4-timeslicing-renamed", "time-slicing", "T4", 0.2, device_plugin_config="slice-4"),
)
MPS = (
    PoolSpec("l40s-mps", "mps", "L40S", 0.6, device_plugin_config="mps-four"),
    PoolSpec("h100-mps", "mps", "H100-80GB-HBM3", 0.4, device_plugin_config="mps-two"),
)
HAMI = (
    PoolSpec("a100-80-hami", "hami", "A100-80GB-PCIe", 0.6),
    PoolSpec("t4-hami", "hami", "T4", 0.4, tainted=False),
)
DRA = (
    PoolSpec("h100-dra", "dra", "H100-80GB-HBM3", 0.45, dra_mode="gpu"),
    PoolSpec("a100-80-dra-mig", "dra", "A100-80GB-PCIe", 0.45, "all-1g.10gb", dra_mode="mig"),
    PoolSpec("h200-dra-partitionable", "dra", "H200", 0.1, dra_mode="partitionable", max_nodes=64),
)


def _scaled(pools: tuple[PoolSpec, ...], factor: float) -> tuple[PoolSpec, ...]:
    return tuple(replace(p, weight=p.weight * factor) for p in pools)


# The mixed fleet: every mechanism at once. DRA gets the largest share so that a 5,000-node build has
# room for most of its 100,000 claims (static 1g MIG devices: 56 per node).
MIXED = (
    _scaled(EXCLUSIVE[:2], 0.18)
    + _scaled(MIG_MIXED[:2], 0.10)
    + _scaled(MIG_SINGLE[:1], 0.08)
    + _scaled(TIME_SLICING[:2], 0.10)
    + _scaled(MPS[:1], 0.06)
    + _scaled(HAMI[:1], 0.10)
    + _scaled(DRA, 0.38)
)

# Topology and driver-managed MIG (issue 30): the NVIDIA DRA driver with DynamicMIG on H200 (partitionable
# devices consuming per-card counters), a plain DRA pool beside it, and NVLink cliques of two nodes.
DRA_TOPOLOGY = (
    PoolSpec(
        "h200-dra-dynamic-mig", "dra", "H200", 0.4, dra_mode="partitionable", max_nodes=64, nodes_per_clique=2
    ),
    PoolSpec("h100-dra", "dra", "H100-80GB-HBM3", 0.2, dra_mode="gpu"),
    PoolSpec("h100-nvlink", "exclusive", "H100-80GB-HBM3", 0.4, nodes_per_clique=2),
)

# Consumable capacity (KEP-5075): H100s the NVIDIA DRA driver shares between claims (ConsumableShares),
# in its "memory" mode (a claim takes the memory it names, by default the whole card) and with 4 shares.
CONSUMABLE_CAPACITY = (
    PoolSpec("h100-dra-shares-memory", "dra", "H100-80GB-HBM3", 0.5, dra_mode="shares-memory"),
    PoolSpec("h100-dra-shares-4", "dra", "H100-80GB-HBM3", 0.5, dra_mode="shares-4"),
)

SCENARIO_POOLS: dict[str, tuple[PoolSpec, ...]] = {
    "empty": (),
    "mixed": MIXED,
    "exclusive": EXCLUSIVE,
    "mig-mixed": MIG_MIXED,
    "mig-single": MIG_SINGLE,
    "timeslicing": TIME_SLICING,
    "mps": MPS,
    "hami": HAMI,
    "dra": DRA,
    "dra-topology": DRA_TOPOLOGY,
    # A DRA pool with a GPU its driver tainted on a health event, beside a HAMi pool with a cordoned GPU
    # (kubesim/scenarios/device_health.py).
    "device-health": (DRA[0], HAMI[0]),
    "consumable-capacity": CONSUMABLE_CAPACITY,
}


def split_nodes(pools: tuple[PoolSpec, ...], nodes: int) -> list[tuple[PoolSpec, int]]:
    """Node count per pool: proportional to weight, capped, every pool at least one node when room allows.

    Largest-remainder rounding keeps the sum exactly `nodes`; capped pools give their excess to the
    uncapped pool with the largest weight.
    """
    if not pools or nodes <= 0:
        return []
    total = sum(p.weight for p in pools)
    raw = [nodes * p.weight / total for p in pools]
    counts = [int(r) for r in raw]
    order = sorted(range(len(pools)), key=lambda i: raw[i] - counts[i], reverse=True)
    for i in order[: nodes - sum(counts)]:
        counts[i] += 1
    if nodes >= len(pools):
        for i in range(len(pools)):
            if counts[i] == 0:
                donor = max(range(len(pools)), key=lambda j: counts[j])
                counts[donor] -= 1
                counts[i] = 1
    uncapped = [i for i, p in enumerate(pools) if p.max_nodes is None]
    for i, pool in enumerate(pools):
        if pool.max_nodes is not None and counts[i] > pool.max_nodes and uncapped:
            excess = counts[i] - pool.max_nodes
            counts[i] = pool.max_nodes
            counts[max(uncapped, key=lambda j: pools[j].weight)] += excess
    return [(pool, count) for pool, count in zip(pools, counts, strict=True) if count > 0]
