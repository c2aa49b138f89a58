"""Plain input and output records of the Kueue compiler: what a selector reads from the database for
one cluster, and the objects compiled from it.

Amounts are ints in the flavor resource's native unit, as in the admission engine; GE per unit is a
``Fraction`` (a seventh of a card has no finite decimal).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any

API_VERSION = "kueue.x-k8s.io/v1beta2"  # the storage version of Kueue v0.19 (kubesim/crds/kueue-v0.19.2)
MANAGED_BY = {"app.kubernetes.io/managed-by": "gpuplatform"}
TENANT_LABEL = "gpuplatform.dev/tenant"
FLAVOR_LABEL = "gpuplatform.dev/flavor"
ADMISSION_CHECK = "gpuplatform-budget"
ADMISSION_CHECK_CONTROLLER = "gpuplatform.dev/budget"


class CompileError(ValueError):
    """The catalogue cannot be expressed in Kueue: nothing is compiled. ``problems`` lists every
    reason found (not only the first), each a sentence a platform-admin can act on."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = sorted(set(problems))
        super().__init__(" ".join(self.problems))


@dataclass(frozen=True, slots=True, kw_only=True)
class Taint:
    key: str
    effect: str
    value: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeInput:
    """A node as the inventory last saw it: which pool it is in, its labels and taints."""

    name: str
    pool: str | None
    labels: Mapping[str, str]
    taints: tuple[Taint, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceInput:
    name: str
    ge_per_unit: Fraction


@dataclass(frozen=True, slots=True, kw_only=True)
class FlavorInput:
    """A flavor on this cluster: its pool, how pods ask for it, and (DRA) its device class."""

    name: str
    pool: str | None
    kind: str  # "device-plugin" | "dra"
    resources: tuple[ResourceInput, ...]
    device_class: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class TenantInput:
    """A node of the tenant tree with the namespaces it owns on this cluster."""

    slug: str
    parent: str | None = None
    namespaces: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class QuotaInput:
    tenant: str
    flavor: str
    resource: str
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GrantInput:
    """An admitted capacity request on a ``kueue`` cluster, as a temporary raise of its tenant's
    nominal quota: ``amount`` of ``resource`` on ``flavor``, while the request holds (admitted or
    active). ``request`` names it in the notes."""

    tenant: str
    flavor: str
    resource: str
    amount: int
    request: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueInput:
    """A tenant's queue, with the ClusterQueue settings it carries (the model's defaults)."""

    tenant: str
    name: str
    strategy: str = "BestEffortFIFO"
    weight: Decimal = Decimal(1)
    within_tenant: str = "LowerPriority"
    reclaim_within_cohort: str = "Any"
    borrow_within_cohort: str = "Never"
    max_priority_threshold: int | None = None
    when_can_borrow: str = "MayStopSearch"
    when_can_preempt: str = "TryNextFlavor"


@dataclass(frozen=True, slots=True, kw_only=True)
class PriorityClassInput:
    name: str
    value: int
    preemptible: bool = True
    description: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CompileInput:
    """Everything the compiler needs for one cluster."""

    cluster: str
    pool_label: str
    nodes: tuple[NodeInput, ...]
    flavors: tuple[FlavorInput, ...]
    tenants: tuple[TenantInput, ...]
    quotas: tuple[QuotaInput, ...]
    queues: tuple[QueueInput, ...] = ()
    priority_classes: tuple[PriorityClassInput, ...] = ()
    grants: tuple[GrantInput, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Compiled:
    """Kueue objects for one cluster, in apply order (flavors and checks before the queues naming
    them), each a plain dict ready for server-side apply; ``device_class_mappings`` is what Kueue's
    own Configuration must say for the DRA flavors (``resources.deviceClassMappings``); ``notes``
    say where Kueue will behave differently from the engine, without refusing."""

    objects: tuple[dict[str, Any], ...]
    device_class_mappings: tuple[dict[str, Any], ...] = ()
    notes: tuple[str, ...] = field(default=())
