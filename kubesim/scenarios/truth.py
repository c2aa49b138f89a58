"""Ground truth a scenario records while generating objects, for inventory sync tests to compare with.

Every figure here is what the generator decided, not what a parser would read back: a test that
re-counts the objects independently and finds the same numbers proves the objects say what we meant.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple


@dataclass(frozen=True, slots=True)
class Allocation:
    """Who holds which GPU unit, as an inventory sync should see it in the allocation ledger.

    `unit` names the shareable unit without node-specific ids:
      gpu:<product>                 whole GPU through the device plugin
      mig:<product>:<profile>       MIG device (single or mixed strategy)
      time-slicing:<product>:<n>    one of n time-slicing replicas of a GPU
      mps:<product>:<n>             one of n MPS replicas
      hami:<product>                a HAMi soft share (one row per resource: gpu, gpumem, gpucores)
      dra:<driver>/<pool>/<device>  a DRA device allocated to a ResourceClaim
    Device plugin holders are Pods (running, bound-and-starting, or terminating); DRA holders are
    ResourceClaims with status.allocation, whatever their pods do.
    """

    holder_kind: str  # "Pod" | "ResourceClaim"
    namespace: str
    name: str
    node: str
    unit: str
    resource: str  # extended resource name, or the DeviceClass for DRA
    count: int

    def __iter__(self) -> Iterator[str | int]:
        """Unpacks like the tuple it stands for: (holder kind, namespace, name, node, unit, resource, n)."""
        return iter(
            (self.holder_kind, self.namespace, self.name, self.node, self.unit, self.resource, self.count)
        )


@dataclass
class NodeTruth:
    name: str
    pool: str
    mechanism: str  # exclusive | mig-mixed | mig-single | time-slicing | mps | hami | dra
    model: str  # GpuModel.key
    product: str  # base product label (without -SHARED / -MIG- suffixes)
    gpus: int
    mig_config: str | None = None
    mig_strategy: str | None = None
    mig_profiles: dict[str, int] = field(default_factory=dict)
    sharing_strategy: str = "none"
    replicas: int = 1
    resources: dict[str, int] = field(default_factory=dict)  # advertised GPU resources
    cordoned: bool = False
    ready: bool = True


class HamiDevice(NamedTuple):
    node: str
    uuid: str
    split_count: int
    memory_mib: int
    cores: int


@dataclass
class DraPoolTruth:
    driver: str
    pool: str
    node: str
    generation: int
    slice_count: int
    devices: Counter[str] = field(default_factory=Counter)  # "gpu" / "mig:<profile>" -> count
    counter_sets: int = 0


@dataclass
class Truth:
    scenario: str
    namespaces: list[str] = field(default_factory=list)  # tenant namespaces
    nodes: dict[str, NodeTruth] = field(default_factory=dict)
    gpus_by_model: Counter[str] = field(default_factory=Counter)  # product -> physical GPUs
    mig_instances: Counter[tuple[str, str]] = field(default_factory=Counter)  # (product, profile) -> n
    shared_replicas: Counter[tuple[str, str]] = field(default_factory=Counter)  # (strategy, product) -> n
    hami_devices: list[HamiDevice] = field(default_factory=list)
    dra_pools: dict[tuple[str, str], DraPoolTruth] = field(default_factory=dict)
    dra_devices: Counter[tuple[str, str]] = field(default_factory=Counter)  # (driver, kind) -> n
    claims_by_state: Counter[str] = field(default_factory=Counter)
    pods_by_phase: Counter[str] = field(default_factory=Counter)
    deleting_pods: int = 0
    allocations: list[Allocation] = field(default_factory=list)
    # (node, device, "key=value:Effect") a health event tainted; (node, GPU UUID) HAMi cordons.
    tainted_devices: list[tuple[str, str, str]] = field(default_factory=list)
    cordoned_gpus: list[tuple[str, str]] = field(default_factory=list)

    @property
    def total_gpus(self) -> int:
        return sum(self.gpus_by_model.values())

    @property
    def total_pods(self) -> int:
        return sum(self.pods_by_phase.values())

    @property
    def total_claims(self) -> int:
        return sum(self.claims_by_state.values())

    def allocations_by_namespace(self) -> dict[str, list[Allocation]]:
        grouped: dict[str, list[Allocation]] = {}
        for allocation in self.allocations:
            grouped.setdefault(allocation.namespace, []).append(allocation)
        return grouped
