"""The engine's input: a frozen `Snapshot`, indexed once when it is built.

Building costs O(tenants x places + allocations + pending log pending); after that `decide` reads
only the requesting tenant's path to its root, so it does not grow with the number of tenants.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from fractions import Fraction
from typing import TypeVar

from .decision import Reason
from .model import (
    ActiveAllocation,
    AdmissionPolicy,
    BudgetSpec,
    FlavorSpec,
    PendingRequest,
    PreemptionPolicy,
    PriorityClassSpec,
    QueueSpec,
    QuotaSpec,
    TenantNode,
)
from .quota import Ledger, Place, QuotaTree, TreeError, add_usage

ALL_FLAVORS = ""  # budget key of a tenant-wide budget
_MICROS_PER_HOUR = 3_600_000_000
T = TypeVar("T")


class SnapshotError(TreeError):
    """The snapshot refers to something it does not contain, or holds impossible values."""


def hours(span: timedelta) -> Fraction:
    """Exact hours of a timedelta, never negative."""
    return max(Fraction(0), Fraction(span // timedelta(microseconds=1), _MICROS_PER_HOUR))


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """Everything one admission decision may look at, as of `now`.

    `free` is the physically free amount per flavor and resource (inventory minus allocations);
    a flavor or resource missing from it has nothing free. `month_end` is the end of the billing
    month in BILLING_TIMEZONE, converted to UTC by the caller.
    """

    now: datetime
    month_end: datetime
    flavors: tuple[FlavorSpec, ...]
    tenants: tuple[TenantNode, ...]
    quotas: tuple[QuotaSpec, ...]
    priority_classes: tuple[PriorityClassSpec, ...]
    queues: tuple[QueueSpec, ...]
    free: Mapping[str, Mapping[str, int]]
    budgets: tuple[BudgetSpec, ...] = ()
    active: tuple[ActiveAllocation, ...] = ()
    pending: tuple[PendingRequest, ...] = ()
    policy: AdmissionPolicy = field(default_factory=AdmissionPolicy)
    index: Index = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", Index(self))


class Index:
    """Derived lookups of a snapshot. Read-only after construction; trials write to child ledgers."""

    def __init__(self, snap: Snapshot) -> None:
        if snap.now.tzinfo is None or snap.month_end.tzinfo is None:
            raise SnapshotError("now and month_end must be timezone-aware")
        _check_policy(snap.policy, "the fleet")
        self.policy = snap.policy
        self.now = snap.now
        self.month_end = snap.month_end
        self.hours_left = hours(snap.month_end - snap.now)
        self.flavors = _unique({f.name: f for f in snap.flavors}, snap.flavors, "flavor")
        self.ge_unit: dict[Place, Fraction] = {
            (f.name, r.name): Fraction(r.ge_per_unit) for f in snap.flavors for r in f.resources
        }
        self._ge_memo: dict[tuple[str, tuple[tuple[str, int], ...]], Fraction] = {}
        self.tenants = _unique({t.id: t for t in snap.tenants}, snap.tenants, "tenant")
        self.tree = QuotaTree(parents={t.id: t.parent for t in snap.tenants}, quotas=snap.quotas)
        self._places: dict[str, list[Place]] = {}
        for q in sorted(snap.quotas, key=lambda q: (q.tenant, q.flavor, q.resource)):
            if (q.flavor, q.resource) not in self.ge_unit:
                raise SnapshotError(f"quota for unknown flavor resource {q.flavor}/{q.resource}")
            self._places.setdefault(q.tenant, []).append((q.flavor, q.resource))
        self.classes = _unique({c.name: c for c in snap.priority_classes}, snap.priority_classes, "class")
        self.queues = _unique({q.id: q for q in snap.queues}, snap.queues, "queue")
        for queue in snap.queues:
            self._known(queue.tenant, self.tenants, "tenant")
            if queue.weight < 0:
                raise SnapshotError(f"queue {queue.id!r} has a negative weight")
            if queue.preemption is not None:
                _check_policy(queue.preemption, f"queue {queue.id!r}")
        self.budgets: dict[tuple[str, str], BudgetSpec] = {}
        self._budget_keys: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for b in snap.budgets:
            key = (b.tenant, b.flavor or ALL_FLAVORS)
            self._known(b.tenant, self.tenants, "tenant")
            if key in self.budgets:
                raise SnapshotError(f"duplicate budget {key}")
            self.budgets[key] = b

        self.base = Ledger()
        for fname, per_resource in snap.free.items():
            for rname, amount in per_resource.items():
                self.base.free[(fname, rname)] = amount
        for key, b in self.budgets.items():
            self.base.committed[key] = Fraction(b.burned_ge_hours)
        self._index_allocations(snap.active)
        self._index_pending(snap.pending)

    # -- allocations -------------------------------------------------------------------------------

    def _index_allocations(self, active: tuple[ActiveAllocation, ...]) -> None:
        self.allocations: dict[str, ActiveAllocation] = {}
        self.alloc_ge: dict[str, Fraction] = {}
        self.alloc_remaining: dict[str, Fraction] = {}  # GE-hours still to burn, where a budget counts
        self.by_tenant_flavor: dict[tuple[str, str], list[ActiveAllocation]] = {}
        own: dict[tuple[str, str, str], int] = {}
        for a in sorted(active, key=lambda a: a.request_id):
            if a.request_id in self.allocations:
                raise SnapshotError(f"duplicate allocation {a.request_id!r}")
            self._known(a.tenant, self.tenants, "tenant")
            self._known(a.priority_class, self.classes, "priority class")
            ge = self.ge_of(a.flavor, a.amounts)
            self.allocations[a.request_id] = a
            self.alloc_ge[a.request_id] = ge
            keys = self.budget_keys(a.tenant, a.flavor)
            if keys:  # only budgets need the GE-hours still to burn (exact, so not free to compute)
                end = self.month_end if a.ends_at is None else min(a.ends_at, self.month_end)
                remaining = ge * hours(end - self.now)
                self.alloc_remaining[a.request_id] = remaining
                for key in keys:
                    self.base.committed[key] += remaining
            self.by_tenant_flavor.setdefault((a.tenant, a.flavor), []).append(a)
            for r, v in a.amounts.items():
                own[(a.tenant, a.flavor, r)] = own.get((a.tenant, a.flavor, r), 0) + v
        # Charging whole per-tenant sums with add_usage gives the same U as Kueue's bottom-up sum.
        for (t, f, r), v in sorted(own.items()):
            add_usage(self.tree, self.base, t, f, r, v)

    # -- pending -----------------------------------------------------------------------------------

    def _index_pending(self, pending: tuple[PendingRequest, ...]) -> None:
        self.pending: dict[str, PendingRequest] = {}
        self.request_ge: dict[str, Fraction] = {}
        self._ge_on: dict[tuple[str, str], Fraction] = {}
        self.viable_flavors: dict[str, tuple[str, ...]] = {}  # flavors that could ever hold it
        self.inadmissible: dict[str, Reason] = {}
        for req in pending:
            if req.id in self.pending or req.id in self.allocations:
                raise SnapshotError(f"duplicate request {req.id!r}")
            self._known(req.tenant, self.tenants, "tenant")
            queue = self._known(req.queue, self.queues, "queue")
            if queue.tenant != req.tenant:
                raise SnapshotError(f"request {req.id!r} is in queue {req.queue!r} of another tenant")
            self._known(req.priority_class, self.classes, "priority class")
            if len(set(req.flavor_choices)) != len(req.flavor_choices):
                raise SnapshotError(f"request {req.id!r} names a flavor twice")
            self.pending[req.id] = req
            self.request_ge[req.id] = self.ge_of(req.flavor, req.amounts)
            for alternative in req.fallback_flavors:
                self.ge_of(alternative, req.amounts)  # validates: the same resources on every flavor
            reason = self._structural_reason(req)
            if reason is not None:
                self.inadmissible[req.id] = reason
        self.queue_order: dict[str, list[str]] = {q: [] for q in sorted(self.queues)}
        by_root: dict[str, list[PendingRequest]] = {}
        for req in sorted(self.pending.values(), key=self.order_key):
            self.queue_order[req.queue].append(req.id)
            if req.id not in self.inadmissible:
                by_root.setdefault(self.tree.nodes[req.tenant].root, []).append(req)
        self.queue_position: dict[str, int] = {}
        self.queue_head: dict[str, str | None] = {}
        for qid, ids in self.queue_order.items():
            admissible = [rid for rid in ids if rid not in self.inadmissible]
            self.queue_head[qid] = admissible[0] if admissible else None
            for pos, rid in enumerate(admissible, start=1):
                self.queue_position[rid] = pos
        self.cohort_position: dict[str, int] = {}
        for reqs in by_root.values():
            for pos, req in enumerate(reqs, start=1):
                self.cohort_position[req.id] = pos
        self.queues_by_root: dict[str, list[str]] = {}
        for qid in sorted(self.queues):
            root = self.tree.nodes[self.queues[qid].tenant].root
            self.queues_by_root.setdefault(root, []).append(qid)

    def _structural_reason(self, req: PendingRequest) -> Reason | None:
        """Reasons no change in usage can cure: checked once, at build."""
        viable = tuple(f for f in req.flavor_choices if not self.exceeds(req, f))
        self.viable_flavors[req.id] = viable
        if req.requires_approval and not req.approved:
            return Reason.AWAITING_APPROVAL
        allowed = self.tenants[req.tenant].allowed_priority_classes
        if allowed is not None and req.priority_class not in allowed:
            return Reason.PRIORITY_CLASS_NOT_ALLOWED
        if not viable:
            return Reason.EXCEEDS_MAX_POSSIBLE
        return None

    def exceeds(self, req: PendingRequest, flavor: str) -> bool:
        """The request could never fit on this flavor: no quota row, or more than its potential."""
        return any(
            a
            and (
                not self.tree.has_quota(req.tenant, flavor, r)
                or a > self.tree.potential(req.tenant, flavor, r)
            )
            for r, a in req.amounts.items()
        )

    def policy_of(self, queue: str) -> AdmissionPolicy:
        """The preemption policy a request of this queue decides by: the queue's own, else the fleet's."""
        return self.queues[queue].preemption or self.policy

    def ge_on(self, req: PendingRequest, flavor: str) -> Fraction:
        """The request's GE on one of its flavors (cached; the first flavor's is `request_ge`)."""
        if flavor == req.flavor:
            return self.request_ge[req.id]
        key = (req.id, flavor)
        ge = self._ge_on.get(key)
        if ge is None:
            ge = self._ge_on[key] = self.ge_of(flavor, req.amounts)
        return ge

    # -- helpers -----------------------------------------------------------------------------------

    def order_key(self, req: PendingRequest) -> tuple[int, int, str]:
        """Queue order: higher priority first, then creation order (FIFO), then id."""
        return (-self.classes[req.priority_class].value, req.created_order, req.id)

    def ge_of(self, flavor: str, amounts: Mapping[str, int]) -> Fraction:
        """Dominant share over the flavor's resources; also validates the amounts. Remembered per
        flavor and amounts: a cohort's hundred holders ask a handful of distinct amounts, and the
        Fraction arithmetic was a tenth of building a snapshot."""
        key = (flavor, tuple(amounts.items()))
        ge = self._ge_memo.get(key)
        if ge is None:
            ge = self._ge_memo[key] = self._dominant_share(flavor, amounts)
        return ge

    def _dominant_share(self, flavor: str, amounts: Mapping[str, int]) -> Fraction:
        self._known(flavor, self.flavors, "flavor")
        ge = Fraction(0)
        total = 0
        for r, a in amounts.items():
            unit = self.ge_unit.get((flavor, r))
            if unit is None:
                raise SnapshotError(f"flavor {flavor!r} has no resource {r!r}")
            if a < 0:
                raise SnapshotError(f"negative amount of {r!r}")
            total += a
            ge = max(ge, a * unit)
        if total == 0:
            raise SnapshotError(f"empty amounts for flavor {flavor!r}")
        return ge

    def places_of(self, tenant: str) -> list[Place]:
        """The (flavor, resource) pairs the tenant has a quota row for, sorted."""
        return self._places.get(tenant, [])

    def budget_keys(self, tenant: str, flavor: str) -> list[tuple[str, str]]:
        """The budgets a tenant's use of a flavor counts against: its own and every ancestor's, since
        a budget covers its whole subtree (a child one creates is no way around a parent's budget)."""
        if not self.budgets:
            return []
        found = self._budget_keys.get((tenant, flavor))
        if found is None:
            path = self.tree.nodes[tenant].path  # every caller's tenant was checked known at build
            found = [k for t in path for k in ((t, ALL_FLAVORS), (t, flavor)) if k in self.budgets]
            self._budget_keys[(tenant, flavor)] = found
        return found

    def expected_hours(self, req: PendingRequest) -> Fraction:
        """Hours the request will burn this month: its duration, capped by the month's end."""
        if req.duration is None:
            return self.hours_left
        return min(hours(req.duration), self.hours_left)

    @staticmethod
    def _known(name: str, table: Mapping[str, T], what: str) -> T:
        try:
            return table[name]
        except KeyError:
            raise SnapshotError(f"unknown {what} {name!r}") from None


def _check_policy(policy: AdmissionPolicy, whose: str) -> None:
    if policy.within_tenant is PreemptionPolicy.ANY:
        raise SnapshotError(
            f"{whose}: within_tenant preemption is Never, LowerPriority or LowerOrNewerEqualPriority"
        )


def _unique(table: dict[str, T], items: tuple[T, ...], what: str) -> dict[str, T]:
    if len(table) != len(items):
        raise SnapshotError(f"duplicate {what} names")
    return table
