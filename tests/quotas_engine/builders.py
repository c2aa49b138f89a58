"""A small vocabulary for admission scenarios: one H100 pool, a handful of tenants, whole GPUs."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from fractions import Fraction

from quotas.admission import (
    ActiveAllocation,
    AdmissionPolicy,
    BudgetSpec,
    FlavorResource,
    FlavorSpec,
    PendingRequest,
    PriorityClassSpec,
    QueueingStrategy,
    QueueSpec,
    QuotaSpec,
    Snapshot,
    TenantNode,
)

NOW = datetime(2025, 3, 31, 0, 0, tzinfo=UTC)
MONTH_END = datetime(2025, 4, 1, 0, 0, tzinfo=UTC)  # 24 hours left in the month
GPU = "nvidia.com/gpu"
ONE_G, THREE_G = "nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb"
H100 = FlavorSpec(
    name="h100", gpu_model="H100", resources=(FlavorResource(name=GPU, ge_per_unit=Fraction(1)),)
)
CLASSES = (
    PriorityClassSpec(name="low", value=100),
    PriorityClassSpec(name="normal", value=500),
    PriorityClassSpec(name="high", value=1000),
    PriorityClassSpec(name="critical", value=2000, preemptible=False),
)


def gpus(tenant: str, nominal: int, *, borrowing: int | None = None, lending: int | None = None) -> QuotaSpec:
    return QuotaSpec(
        tenant=tenant,
        flavor="h100",
        resource=GPU,
        nominal=nominal,
        borrowing_limit=borrowing,
        lending_limit=lending,
    )


def request(
    rid: str,
    tenant: str,
    amount: int,
    *,
    order: int,
    prio: str = "normal",
    hours: int | None = 1,
    flavor: str = "h100",
    resource: str = GPU,
    queue: str | None = None,
    approval: bool = False,
) -> PendingRequest:
    return PendingRequest(
        id=rid,
        tenant=tenant,
        queue=queue or f"{tenant}-q",
        flavor=flavor,
        amounts={resource: amount},
        priority_class=prio,
        created_order=order,
        duration=None if hours is None else timedelta(hours=hours),
        requires_approval=approval,
    )


def holding(
    rid: str,
    tenant: str,
    amount: int,
    *,
    order: int,
    prio: str = "normal",
    flavor: str = "h100",
    resource: str = GPU,
) -> ActiveAllocation:
    return ActiveAllocation(
        request_id=rid,
        tenant=tenant,
        flavor=flavor,
        amounts={resource: amount},
        priority_class=prio,
        admitted_order=order,
        ends_at=NOW + timedelta(hours=1),
    )


def snapshot(
    *,
    tree: dict[str, str | None],
    quotas: Iterable[QuotaSpec],
    free: int | dict[str, dict[str, int]] = 100,
    active: Iterable[ActiveAllocation] = (),
    pending: Iterable[PendingRequest] = (),
    budgets: Iterable[BudgetSpec] = (),
    strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO,
    weights: dict[str, int] | None = None,
    flavors: tuple[FlavorSpec, ...] = (H100,),
    policy: AdmissionPolicy | None = None,
) -> Snapshot:
    """`tree` maps tenant -> parent; each tenant gets one queue named `<tenant>-q`."""
    weights = weights or {}
    return Snapshot(
        now=NOW,
        month_end=MONTH_END,
        flavors=flavors,
        tenants=tuple(TenantNode(id=t, parent=p) for t, p in tree.items()),
        quotas=tuple(quotas),
        priority_classes=CLASSES,
        queues=tuple(
            QueueSpec(id=f"{t}-q", tenant=t, strategy=strategy, weight=Fraction(weights.get(t, 1)))
            for t in tree
        ),
        free={"h100": {GPU: free}} if isinstance(free, int) else free,
        budgets=tuple(budgets),
        active=tuple(active),
        pending=tuple(pending),
        policy=policy or AdmissionPolicy(),
    )


def h100_mig_flavor(name: str = "mig") -> FlavorSpec:
    """An H100 in MIG mode as a flavor: a 1g.10gb slice is 1/7 GE, a 3g.40gb slice 1/2 GE."""
    return FlavorSpec(
        name=name,
        resources=(
            FlavorResource(name=ONE_G, ge_per_unit=Fraction(1, 7)),
            FlavorResource(name=THREE_G, ge_per_unit=Fraction(1, 2)),
        ),
    )
