"""Choosing victims: Kueue's classical preemption, hierarchical reclaim included.

Which requests may go, for a request of tenant t on flavor f (the resources it cannot get now are
the ones "needing preemption"):

- **same tenant**: t's own requests that its queue's `within_tenant` policy allows (Kueue's
  withinClusterQueue: LowerPriority, or LowerOrNewerEqualPriority);
- **hierarchy candidates**: requests of relatives that are beyond their quota, in a part of the tree
  where t has the *hierarchical advantage*: walking up from t, once the request fits in the quota of
  an ancestor (a department's pool), everything beyond its quota below that ancestor's other children
  and above it competes for quota t's subtree is owed, and may go whatever its priority (as allowed
  by `reclaim_within_cohort`);
- **priority candidates**: the other relatives beyond their quota, allowed by `reclaim_within_cohort`;
  without `borrow_within_cohort` they may go only if t does not borrow once all its evictions are
  done; with it (LowerPriority) also while t borrows, if their priority is lower than the request's
  and at most `max_priority_threshold`.

A relative is only a candidate while it (and its part of the tree up to where it meets t) is beyond
its quota, re-checked after every eviction. Non-preemptible classes are never candidates.

Order (Kueue's CandidatesOrdering): hierarchy candidates, then priority candidates, then the tenant's
own; within each lower priority first, then most recently admitted, then id. Victims are taken in that
order until the request fits (allowing borrowing, or not, in the order Kueue tries them), then every
victim but the last is put back, latest first, whenever the request still fits without it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from .accounting import release, restore
from .decision import Victim
from .model import (
    ActiveAllocation,
    AdmissionPolicy,
    BorrowWithinCohortPolicy,
    PendingRequest,
    PreemptionPolicy,
)
from .quota import Ledger, available
from .snapshot import Index


class Variant(enum.IntEnum):
    WITHIN = 1  # same tenant
    HIERARCHICAL = 2  # t has the hierarchical advantage over it
    RECLAIM_WITHOUT_BORROWING = 3  # only if t ends within its quota
    RECLAIM_WHILE_BORROWING = 4  # borrowWithinCohort allows it even while t borrows


CAUSE = {
    Variant.WITHIN: "priority",
    Variant.HIERARCHICAL: "reclaim",
    Variant.RECLAIM_WITHOUT_BORROWING: "reclaim",
    Variant.RECLAIM_WHILE_BORROWING: "reclaim_while_borrowing",
}

Candidate = tuple[tuple[int, int, str], ActiveAllocation, Variant, str]  # key, alloc, variant, lca


def satisfies(policy: PreemptionPolicy, prio: int, created: int, cand_prio: int, cand_created: int) -> bool:
    """Kueue's SatisfiesPreemptionPolicy: may a request of (prio, created) preempt this candidate?"""
    if policy is PreemptionPolicy.ANY:
        return True
    if policy is PreemptionPolicy.LOWER_PRIORITY:
        return cand_prio < prio
    if policy is PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY:
        return cand_prio < prio or (cand_prio == prio and created < cand_created)
    return False


class _Search:
    """One preemption search: the request, its flavor, and the tree's state on a trial ledger."""

    def __init__(
        self,
        ix: Index,
        ledger: Ledger,
        req: PendingRequest,
        flavor: str,
        places: list[tuple[str, int]],
        policy: AdmissionPolicy,
    ) -> None:
        self.ix, self.ledger, self.req, self.f, self.places, self.policy = (
            ix,
            ledger,
            req,
            flavor,
            places,
            policy,
        )
        self.t = req.tenant
        self.prio = ix.classes[req.priority_class].value
        tree = ix.tree
        self.need = [
            r
            for r, a in places
            if a > available(tree, ledger, self.t, flavor, r) or a > ledger.free_of((flavor, r))
        ] or [r for r, _ in places]

    # -- quota predicates (Kueue's resource-node helpers) ----------------------------------------

    def within_nominal(self, ledger: Ledger, node: str) -> bool:
        """IsWithinNominalInResources: the node's subtree uses no more than its quota."""
        sub = self.ix.tree.subtree
        return all(ledger.u((node, self.f, r)) <= sub.get((node, self.f, r), 0) for r in self.need)

    def fits_in_quota(self, node: str, remaining: dict[str, int]) -> tuple[bool, dict[str, int]]:
        """QuantitiesFitInQuota: does `remaining` fit in the node's quota, and what exceeds the part
        only its subtree can use (its guaranteed quota) and so must come from above."""
        tree, ledger, f = self.ix.tree, self.ledger, self.f
        fits = True
        rest: dict[str, int] = {}
        for r, v in remaining.items():
            k = (node, f, r)
            used = ledger.u(k)
            if tree.subtree.get(k, 0) < used + v:
                fits = False
            rest[r] = max(0, v - max(0, tree.guaranteed.get(k, 0) - used))
        return fits, rest

    def fits(self, trial: Ledger, allow_borrowing: bool) -> bool:
        tree, t, f = self.ix.tree, self.t, self.f
        for r, a in self.places:
            if not allow_borrowing and trial.u((t, f, r)) + a > tree.subtree.get((t, f, r), 0):
                return False
            if a > available(tree, trial, t, f, r) or a > trial.free_of((f, r)):
                return False
        return True

    # -- candidates ------------------------------------------------------------------------------

    def _allocs(self, tenant: str) -> Iterable[ActiveAllocation]:
        for alloc in self.ix.by_tenant_flavor.get((tenant, self.f), ()):
            cls = self.ix.classes[alloc.priority_class]
            usable = cls.preemptible and not self.ledger.is_removed(alloc.request_id)
            if usable and any(alloc.amounts.get(r, 0) for r in self.need):
                yield alloc

    def _allowed(self, policy: PreemptionPolicy, alloc: ActiveAllocation) -> bool:
        cand_created = alloc.created_order if alloc.created_order is not None else alloc.admitted_order
        return satisfies(
            policy,
            self.prio,
            self.req.created_order,
            self.ix.classes[alloc.priority_class].value,
            cand_created,
        )

    def _key(self, alloc: ActiveAllocation) -> tuple[int, int, str]:
        return (self.ix.classes[alloc.priority_class].value, -alloc.admitted_order, alloc.request_id)

    def _classify(self, alloc: ActiveAllocation, advantage: bool) -> Variant | None:
        if not self._allowed(self.policy.reclaim_within_cohort, alloc):
            return None
        if advantage:
            return Variant.HIERARCHICAL
        bwc = self.policy.borrow_within_cohort
        if bwc.policy is BorrowWithinCohortPolicy.NEVER:
            return Variant.RECLAIM_WITHOUT_BORROWING
        cand = self.ix.classes[alloc.priority_class].value
        threshold = bwc.max_priority_threshold
        if cand >= self.prio or (threshold is not None and cand > threshold):
            return Variant.RECLAIM_WITHOUT_BORROWING
        return Variant.RECLAIM_WHILE_BORROWING

    def candidates(self) -> tuple[list[Candidate], list[Candidate], list[Candidate]]:
        """(hierarchy, priority, same-tenant) candidates, each in Kueue's order."""
        ix, t = self.ix, self.t
        same: list[Candidate] = []
        if self.policy.within_tenant is not PreemptionPolicy.NEVER:
            same = [
                (self._key(a), a, Variant.WITHIN, t)
                for a in self._allocs(t)
                if self._allowed(self.policy.within_tenant, a)
            ]
        hierarchy: list[Candidate] = []
        priority: list[Candidate] = []
        node = ix.tree.nodes[t]
        if node.parent is not None and self.policy.reclaim_within_cohort is not PreemptionPolicy.NEVER:
            advantage, remaining = self.fits_in_quota(t, dict(self.places))
            previous = t
            for ancestor in node.path[1:]:
                out = hierarchy if advantage else priority
                if not self.within_nominal(self.ledger, ancestor):
                    # A tenant with children may hold requests too: judged by its whole subtree.
                    self._add(out, ancestor, ancestor, advantage)
                self._collect(ancestor, previous, ancestor, advantage, out)
                fits, remaining = self.fits_in_quota(ancestor, remaining)
                advantage = advantage or fits
                previous = ancestor
        for group in (hierarchy, priority, same):
            group.sort(key=lambda c: c[0])
        return hierarchy, priority, same

    def _collect(self, node: str, skip: str | None, lca: str, advantage: bool, out: list[Candidate]) -> None:
        """Relatives below `node` (but not in `skip`'s subtree) that are beyond their quota."""
        for child in self.ix.tree.nodes[node].children:
            if child == skip or self.within_nominal(self.ledger, child):
                continue
            self._add(out, child, lca, advantage)
            self._collect(child, None, lca, advantage, out)

    def _add(self, out: list[Candidate], tenant: str, lca: str, advantage: bool) -> None:
        for alloc in self._allocs(tenant):
            variant = self._classify(alloc, advantage)
            if variant is not None:
                out.append((self._key(alloc), alloc, variant, lca))

    def valid(self, trial: Ledger, cand: Candidate, allow_borrowing: bool) -> bool:
        """Kueue's candidateIsValid: earlier evictions may have brought the relative within quota."""
        _, alloc, variant, lca = cand
        if alloc.tenant == self.t:
            return True
        if allow_borrowing and variant is Variant.RECLAIM_WITHOUT_BORROWING:
            return False
        if self.within_nominal(trial, alloc.tenant):
            return False
        if alloc.tenant == lca:
            return True
        for node in self.ix.tree.nodes[alloc.tenant].path[1:]:
            if node == lca:
                break
            if self.within_nominal(trial, node):
                return False
        return True


def find_victims(
    ix: Index,
    ledger: Ledger,
    req: PendingRequest,
    places: list[tuple[str, int]],
    *,
    flavor: str | None = None,
) -> tuple[tuple[Victim, ...], Ledger] | None:
    """Victims that let `req` fit on `flavor` (its first by default), and a trial ledger with them
    evicted; None if none can."""
    search = _Search(ix, ledger, req, flavor or req.flavor, places, ix.policy_of(req.queue))
    hierarchy, priority, same = search.candidates()
    if not (hierarchy or priority or same):
        return None
    forbidden = search.policy.borrow_within_cohort.policy is BorrowWithinCohortPolicy.NEVER
    tree, t, f = ix.tree, req.tenant, search.f
    under_nominal = all(ledger.u((t, f, r)) < tree.subtree.get((t, f, r), 0) for r in search.need)
    # Kueue tries "allowing borrowing" and "not borrowing" in this order (classicalPreemptions).
    attempts: tuple[bool, ...]
    if not (hierarchy or priority) or (forbidden and not under_nominal):
        attempts = (True,)
    elif forbidden and not hierarchy:
        attempts = (False, True)
    else:
        attempts = (True, False)
    ordered = hierarchy + priority + same
    for allow_borrowing in attempts:
        trial = ledger.child()
        chosen: list[Candidate] = []
        for cand in ordered:
            if not search.valid(trial, cand, allow_borrowing):
                continue
            release(ix, trial, cand[1])
            chosen.append(cand)
            if search.fits(trial, allow_borrowing):
                break
        else:
            continue
        for i in range(len(chosen) - 2, -1, -1):
            alloc = chosen[i][1]
            restore(ix, trial, alloc)
            if search.fits(trial, allow_borrowing):
                del chosen[i]
            else:
                release(ix, trial, alloc)
        victims = tuple(
            Victim(
                request_id=alloc.request_id,
                tenant=alloc.tenant,
                priority=ix.classes[alloc.priority_class].value,
                amounts=dict(alloc.amounts),
                ge=ix.alloc_ge[alloc.request_id],
                cause=CAUSE[variant],
            )
            for _, alloc, variant, _ in chosen
        )
        return victims, trial
    return None
