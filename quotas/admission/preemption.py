"""Choosing victims: Kueue's classical preemption, without preemption while borrowing.

Candidates are (a) the tenant's own lower-priority requests in the flavor (withinClusterQueue:
LowerPriority) and, only when the request fits in the tenant's own subtree quota, (b) requests of
relatives in the same tree whose tenant is borrowing (reclaimWithinCohort: Any or LowerPriority).
Non-preemptible classes are never candidates.

Order (Kueue's CandidatesOrdering): relatives' borrowing requests before the tenant's own, then
lowest priority, then most recently admitted, then id. Victims are taken greedily in that order
until the request fits; then every victim but the last is put back, latest first, whenever the
request still fits without it, so no victim is superfluous.
"""

from __future__ import annotations

from .accounting import fits, release, restore
from .decision import Victim
from .model import ActiveAllocation, PendingRequest, PreemptionPolicy
from .quota import Ledger, borrowing
from .snapshot import Index

_RECLAIM, _PRIORITY = "reclaim", "priority"


def find_victims(
    ix: Index, ledger: Ledger, req: PendingRequest, places: list[tuple[str, int]]
) -> tuple[tuple[Victim, ...], Ledger] | None:
    """Victims that let `req` fit, and a trial ledger with them evicted; None if none can."""
    tree, t, f = ix.tree, req.tenant, req.flavor
    prio = ix.classes[req.priority_class].value
    needed = [r for r, _ in places]
    # Gaining borrowing through preemption is never allowed: after eviction and admission the
    # tenant may not be further beyond its subtree quota than it is now, in any resource.
    before = {r: borrowing(tree, ledger, t, f, r) for r in needed}
    within_nominal = all(ledger.u((t, f, r)) + a <= tree.subtree.get((t, f, r), 0) for r, a in places)

    candidates: list[tuple[tuple[int, int, int, str], ActiveAllocation, str]] = []
    if ix.policy.within_tenant is PreemptionPolicy.LOWER_PRIORITY:
        for alloc in ix.by_tenant_flavor.get((t, f), ()):
            cls = ix.classes[alloc.priority_class]
            if cls.preemptible and cls.value < prio and not ledger.is_removed(alloc.request_id):
                candidates.append(((1, cls.value, -alloc.admitted_order, alloc.request_id), alloc, _PRIORITY))
    reclaim = ix.policy.reclaim_within_cohort
    if within_nominal and reclaim is not PreemptionPolicy.NEVER:
        for holder in ix.holders.get((tree.nodes[t].root, f), ()):
            if holder == t or not any(borrowing(tree, ledger, holder, f, r) for r in needed):
                continue
            for alloc in ix.by_tenant_flavor[(holder, f)]:
                cls = ix.classes[alloc.priority_class]
                if not cls.preemptible or ledger.is_removed(alloc.request_id):
                    continue
                if reclaim is PreemptionPolicy.LOWER_PRIORITY and cls.value >= prio:
                    continue
                if not any(alloc.amounts.get(r, 0) for r in needed):
                    continue
                candidates.append(((0, cls.value, -alloc.admitted_order, alloc.request_id), alloc, _RECLAIM))
    if not candidates:
        return None
    candidates.sort(key=lambda c: c[0])

    trial = ledger.child()

    def ok() -> bool:
        quota_ok, physical_ok = fits(ix, trial, t, f, places)
        if not (quota_ok and physical_ok):
            return False
        return all(
            max(0, trial.u((t, f, r)) + a - tree.subtree.get((t, f, r), 0)) <= before[r] for r, a in places
        )

    chosen: list[tuple[ActiveAllocation, str]] = []
    for _, alloc, cause in candidates:
        # A relative stops being a candidate once earlier evictions ended its borrowing.
        if cause == _RECLAIM and not any(borrowing(tree, trial, alloc.tenant, f, r) for r in needed):
            continue
        release(ix, trial, alloc)
        chosen.append((alloc, cause))
        if ok():
            break
    else:
        return None

    for i in range(len(chosen) - 2, -1, -1):
        alloc, _ = chosen[i]
        restore(ix, trial, alloc)
        if ok():
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
            cause=cause,
        )
        for alloc, cause in chosen
    )
    return victims, trial
