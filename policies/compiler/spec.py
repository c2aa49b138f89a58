"""The compiler's inputs and outputs: plain dataclasses, no Django (a pure module)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = [
    "CorePolicy",
    "MigStrategy",
    "ModelCards",
    "PolicyProblem",
    "PoolSpec",
    "SharingMode",
    "SharingSpec",
]


class SharingMode(StrEnum):
    EXCLUSIVE = "exclusive"
    MIG = "mig"
    TIME_SLICING = "time-slicing"
    MPS = "mps"
    HAMI = "hami"
    DRA = "dra"


class MigStrategy(StrEnum):
    # The device plugin's migStrategy: mixed advertises nvidia.com/mig-<profile> per profile; single
    # advertises every (identical) instance as nvidia.com/gpu.
    MIXED = "mixed"
    SINGLE = "single"


class CorePolicy(StrEnum):
    # HAMi's gpuCorePolicy (realworld/hami-config.yaml): default | force | disable.
    DEFAULT = "default"
    FORCE = "force"
    DISABLE = "disable"


@dataclass(frozen=True, slots=True)
class ModelCards:
    """One GPU model in a pool and how many physical cards of it the pool's nodes hold."""

    model_key: str
    cards: int
    nodes: int


@dataclass(frozen=True, slots=True)
class PoolSpec:
    cluster: str
    name: str
    models: tuple[ModelCards, ...]  # sorted by model key
    node_names: tuple[str, ...] = ()
    # Nodes whose MIG layout the NVIDIA DRA driver owns (DynamicMIG): no geometry, no MIG label there.
    driver_managed_mig_nodes: tuple[str, ...] = ()

    @property
    def driver_managed_mig(self) -> bool:
        return bool(self.driver_managed_mig_nodes)


@dataclass(frozen=True, slots=True)
class SharingSpec:
    """A pool's declared sharing: the mode and its parameters, as stored.

    ``parameters`` per mode: mig {"strategy": "mixed"|"single", "geometry": {model: {profile: n}}};
    time-slicing {"replicas": n, "fail_requests_greater_than_one": bool}; mps {"replicas": n,
    "memory_limit_mib": n|None}; hami {"split_count": n, "memory_scaling": x, "core_policy": p};
    exclusive and dra: {}. ``resource_name`` is the pool's own extended resource ("" = derived).
    """

    mode: SharingMode
    parameters: dict[str, Any] = field(default_factory=dict)
    resource_name: str = ""


@dataclass(frozen=True, slots=True)
class PolicyProblem:
    code: str  # stable: "policy.replicas_too_low"
    message: str
    field: str = ""  # "parameters.replicas", "parameters.geometry.H100-80GB"
