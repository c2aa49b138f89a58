"""Plain input records of the admission engine: what the lead's selectors read from the database.

Native amounts are ints in the flavor's base unit (devices, MiB, percent); the Kubernetes quantity
helper turns `40Gi` or `500m` into those before they get here. GE is a `Fraction`: MIG and
time-slicing shares are thirds and sevenths, which no decimal represents exactly, and quota and
budget sums must not drift however many requests are added and removed.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from fractions import Fraction


class QueueingStrategy(enum.StrEnum):
    """Kueue's two queueing strategies, same names and meaning."""

    STRICT_FIFO = "StrictFIFO"  # a head that cannot be admitted blocks everything behind it
    BEST_EFFORT_FIFO = "BestEffortFIFO"  # requests behind a blocked head may be admitted


class PreemptionPolicy(enum.StrEnum):
    """Which admitted requests a pending one may preempt (Kueue's `PreemptionPolicy` values)."""

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"
    # Lower priority, or equal priority and created later than the preemptor: starvation protection
    # among equal-priority work (the older request wins).
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"
    ANY = "Any"


class BorrowWithinCohortPolicy(enum.StrEnum):
    """Kueue's `borrowWithinCohort.policy`: may a request preempt relatives while it borrows?"""

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"


class FungibilityPolicy(enum.StrEnum):
    """Kueue's `flavorFungibility` choices (v1beta2 names)."""

    MAY_STOP_SEARCH = "MayStopSearch"  # take this flavor (Kueue v1beta1: Borrow / Preempt)
    TRY_NEXT_FLAVOR = "TryNextFlavor"  # look at the next flavor first, come back if none is better


@dataclass(frozen=True, slots=True, kw_only=True)
class FlavorResource:
    """One resource a flavor is counted in, and how much of a card one unit of it is."""

    name: str  # "nvidia.com/gpu", "nvidia.com/mig-3g.40gb", "nvidia.com/gpumem", "gpu.example.com"
    ge_per_unit: Fraction  # 1 for a whole card, 1/2 for 3g.40gb on an H100, 1/81920 for a MiB of 80 GiB


@dataclass(frozen=True, slots=True, kw_only=True)
class FlavorSpec:
    """A named kind of capacity: a node pool x GPU model x resource (or DRA device class).

    A request's GE is the dominant share over the flavor's resources (DESIGN section 3): for a HAMi
    share asking 30 gpucores and 20480 MiB of an 80 GiB card, max(30/100, 20480/81920) = 0.3.
    """

    name: str
    resources: tuple[FlavorResource, ...]
    gpu_model: str = ""  # GE is only comparable within one model; kept for messages and reports


@dataclass(frozen=True, slots=True, kw_only=True)
class TenantNode:
    """A node of the tenant tree. The whole tree under one root is a cohort, at any depth."""

    id: str
    parent: str | None = None
    # None: every priority class may be used; otherwise only the named ones.
    allowed_priority_classes: frozenset[str] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class QuotaSpec:
    """Kueue's per flavor-resource quota, on a tenant.

    nominal: guaranteed to the tenant's subtree (a parent's nominal is an extra pool shared by its
    whole subtree, added to what the children lend, exactly as a Kueue Cohort's own quota).
    borrowing_limit: how far beyond its subtree quota the subtree may borrow from above; None is
    unlimited. lending_limit: how much of its subtree quota it lends upward; None lends all unused.
    """

    tenant: str
    flavor: str
    resource: str
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PriorityClassSpec:
    name: str
    value: int
    preemptible: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class FlavorFungibility:
    """How a request naming several flavors picks one (Kueue's ClusterQueue `flavorFungibility`).

    when_can_borrow MAY_STOP_SEARCH: a flavor that fits by borrowing is taken; TRY_NEXT_FLAVOR: a
    later flavor that fits without borrowing is preferred. when_can_preempt MAY_STOP_SEARCH: a flavor
    that fits by preempting is taken; TRY_NEXT_FLAVOR (Kueue's default): a later flavor that fits
    without preemption is preferred, and the preempting one is used only if none does.
    """

    when_can_borrow: FungibilityPolicy = FungibilityPolicy.MAY_STOP_SEARCH
    when_can_preempt: FungibilityPolicy = FungibilityPolicy.TRY_NEXT_FLAVOR


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueSpec:
    """A tenant's queue: its strategy orders its own requests, its weight scales fair sharing.

    preemption: the queue's own preemption policy (Kueue's per-ClusterQueue `preemption` block);
    None uses the snapshot's fleet-wide policy. fungibility: how its requests pick among flavors.
    """

    id: str
    tenant: str
    strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    weight: Fraction = Fraction(1)  # 0 means "always last when borrowing", as in Kueue
    preemption: AdmissionPolicy | None = None
    fungibility: FlavorFungibility = FlavorFungibility()


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetSpec:
    """A monthly GE-hour budget of a tenant, for all flavors (flavor None) or one flavor."""

    tenant: str
    flavor: str | None
    limit_ge_hours: Fraction
    burned_ge_hours: Fraction  # metered so far this billing month
    hard: bool  # hard blocks admission; soft admits and warns


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingRequest:
    """A pending request for capacity."""

    id: str
    tenant: str
    queue: str
    flavor: str
    amounts: Mapping[str, int]  # resource name -> native amount; HAMi: totals over its shares
    priority_class: str
    created_order: int  # monotonic creation sequence; ties broken by id
    duration: timedelta | None = None  # None: open-ended
    requires_approval: bool = False
    approved: bool = False
    # Flavors to fall back to, in order, after `flavor` ("H100, else A100"); they count the same
    # resources. The queue's fungibility says when a later one is preferred.
    fallback_flavors: tuple[str, ...] = ()

    @property
    def flavor_choices(self) -> tuple[str, ...]:
        return (self.flavor, *self.fallback_flavors)


@dataclass(frozen=True, slots=True, kw_only=True)
class ActiveAllocation:
    """An admitted request (or an allocation found by inventory) that holds capacity now."""

    request_id: str
    tenant: str
    flavor: str
    amounts: Mapping[str, int]
    priority_class: str
    admitted_order: int  # higher is more recent; the first preempted among equal priorities
    ends_at: datetime | None = None  # None: open-ended, counts to the end of the month for budgets
    # The request's creation order, for LowerOrNewerEqualPriority; None falls back to admitted_order.
    created_order: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BorrowWithinCohort:
    """Kueue's `borrowWithinCohort`: with LOWER_PRIORITY a request that will borrow may still preempt
    relatives' lower-priority requests, those at or below `max_priority_threshold` when it is set."""

    policy: BorrowWithinCohortPolicy = BorrowWithinCohortPolicy.NEVER
    max_priority_threshold: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AdmissionPolicy:
    """Preemption knobs, Kueue's ClusterQueue `preemption` block (fleet-wide, or one queue's own).

    within_tenant: which of its own tenant's requests a request may preempt (Kueue's
    withinClusterQueue: NEVER, LOWER_PRIORITY or LOWER_OR_NEWER_EQUAL_PRIORITY).
    reclaim_within_cohort: which requests of borrowing relatives it may preempt (Kueue's
    reclaimWithinCohort). borrow_within_cohort: whether it may do so while it borrows itself.
    """

    within_tenant: PreemptionPolicy = PreemptionPolicy.LOWER_PRIORITY
    reclaim_within_cohort: PreemptionPolicy = PreemptionPolicy.ANY
    borrow_within_cohort: BorrowWithinCohort = BorrowWithinCohort()
