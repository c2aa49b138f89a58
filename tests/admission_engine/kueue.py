"""Kueue's test vocabulary on our engine's builders (tests/quotas_engine/builders.py).

Mapping: a ClusterQueue is a leaf tenant, a Cohort a tenant above it (its quota the tenant's nominal),
Kueue's `cpu` on flavor `default` is whole H100s on `h100` (one GE each), a priority value p is the
class `p<p>` (`p-1` for -1). Kueue's tests hand the preemptor an assignment in Preempt mode; here the
engine finds the mode itself, so each port asserts the outcome the engine then reaches. Physical
capacity is ample (Kueue trusts quota), unless a case says otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from fractions import Fraction

from quotas.admission import (
    ActiveAllocation,
    AdmissionPolicy,
    BorrowWithinCohort,
    BorrowWithinCohortPolicy,
    FlavorFungibility,
    FlavorResource,
    FlavorSpec,
    PendingRequest,
    PreemptionPolicy,
    PriorityClassSpec,
    QueueSpec,
    QuotaSpec,
    Snapshot,
    TenantNode,
)
from tests.quotas_engine.builders import GPU, H100, MONTH_END, NOW, gpus

NEVER = PreemptionPolicy.NEVER
LOWER = PreemptionPolicy.LOWER_PRIORITY
LOWER_OR_NEWER = PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY
ANY = PreemptionPolicy.ANY
PRIORITIES = (-10, -2, -1, 0, 1, 2, 3, 50, 100)
CLASSES = tuple(PriorityClassSpec(name=f"p{v}", value=v) for v in PRIORITIES)
A100 = FlavorSpec(
    name="a100", gpu_model="A100", resources=(FlavorResource(name=GPU, ge_per_unit=Fraction(1)),)
)
AMPLE = 1_000


def policy(
    within: PreemptionPolicy = LOWER,
    reclaim: PreemptionPolicy = ANY,
    *,
    borrow_within_cohort: bool = False,
    threshold: int | None = None,
) -> AdmissionPolicy:
    """A ClusterQueue's `preemption` block."""
    bwc = BorrowWithinCohort(
        policy=BorrowWithinCohortPolicy.LOWER_PRIORITY
        if borrow_within_cohort
        else BorrowWithinCohortPolicy.NEVER,
        max_priority_threshold=threshold,
    )
    return AdmissionPolicy(within_tenant=within, reclaim_within_cohort=reclaim, borrow_within_cohort=bwc)


def quota(
    tenant: str,
    nominal: int,
    *,
    borrowing: int | None = None,
    lending: int | None = None,
    flavor: str = "h100",
) -> QuotaSpec:
    q = gpus(tenant, nominal, borrowing=borrowing, lending=lending)
    return QuotaSpec(
        tenant=q.tenant,
        flavor=flavor,
        resource=GPU,
        nominal=q.nominal,
        borrowing_limit=q.borrowing_limit,
        lending_limit=q.lending_limit,
    )


def admitted(
    rid: str,
    tenant: str,
    amount: int,
    *,
    prio: int = 0,
    order: int = 1,
    created: int | None = None,
    flavor: str = "h100",
) -> ActiveAllocation:
    """A workload holding quota. Equal `order` is Kueue's equal quota-reservation time."""
    return ActiveAllocation(
        request_id=rid,
        tenant=tenant,
        flavor=flavor,
        amounts={GPU: amount},
        priority_class=f"p{prio}",
        admitted_order=order,
        ends_at=NOW + timedelta(hours=1),
        created_order=created,
    )


def incoming(
    tenant: str, amount: int, *, prio: int = 0, created: int = 100, flavors: tuple[str, ...] = ("h100",)
) -> PendingRequest:
    return PendingRequest(
        id="in",
        tenant=tenant,
        queue=f"{tenant}-q",
        flavor=flavors[0],
        fallback_flavors=flavors[1:],
        amounts={GPU: amount},
        priority_class=f"p{prio}",
        created_order=created,
        duration=timedelta(hours=1),
    )


def cluster(
    *,
    tree: dict[str, str | None],
    quotas: Iterable[QuotaSpec],
    active: Iterable[ActiveAllocation] = (),
    pending: Iterable[PendingRequest] = (),
    policies: dict[str, AdmissionPolicy] | None = None,
    fungibility: dict[str, FlavorFungibility] | None = None,
    free: dict[str, int] | None = None,
    flavors: tuple[FlavorSpec, ...] = (H100,),
) -> Snapshot:
    """`tree` maps tenant -> parent; each tenant has one queue `<tenant>-q` with its own policy."""
    policies = policies or {}
    fungibility = fungibility or {}
    free = free or {f.name: AMPLE for f in flavors}
    return Snapshot(
        now=NOW,
        month_end=MONTH_END,
        flavors=flavors,
        tenants=tuple(TenantNode(id=t, parent=p) for t, p in tree.items()),
        quotas=tuple(quotas),
        priority_classes=CLASSES,
        queues=tuple(
            QueueSpec(
                id=f"{t}-q",
                tenant=t,
                preemption=policies.get(t),
                fungibility=fungibility.get(t, FlavorFungibility()),
            )
            for t in tree
        ),
        free={name: {GPU: amount} for name, amount in free.items()},
        active=tuple(active),
        pending=tuple(pending),
    )
