"""Charging and releasing capacity on a ledger, and the fit test shared by admission and preemption."""

from __future__ import annotations

from .decision import Decision
from .model import ActiveAllocation, PendingRequest
from .quota import Ledger, add_usage, available, remove_usage
from .snapshot import Index


def fits(
    ix: Index, ledger: Ledger, tenant: str, flavor: str, places: list[tuple[str, int]]
) -> tuple[bool, bool]:
    """(fits in quota, fits in free physical capacity) for every requested resource."""
    quota_ok = all(a <= available(ix.tree, ledger, tenant, flavor, r) for r, a in places)
    physical_ok = all(a <= ledger.free_of((flavor, r)) for r, a in places)
    return quota_ok, physical_ok


def apply(ix: Index, ledger: Ledger, req: PendingRequest, decision: Decision) -> None:
    """Charge an admitted decision (and evict its victims) on the working ledger."""
    f = decision.flavor  # the flavor it was admitted on: its first, or one it falls back to
    for victim in decision.victims:
        release(ix, ledger, ix.allocations[victim.request_id])
    for r, a in req.amounts.items():
        if a:
            add_usage(ix.tree, ledger, req.tenant, f, r, a)
            ledger.free[(f, r)] = ledger.free_of((f, r)) - a
    for key in ix.budget_keys(req.tenant, f):
        ledger.committed[key] = ledger.committed_of(key) + decision.expected_ge_hours


def release(ix: Index, ledger: Ledger, alloc: ActiveAllocation) -> None:
    """Evict an allocation on the ledger: its quota, its physical capacity, its budget commitment."""
    for r, a in alloc.amounts.items():
        if a:
            remove_usage(ix.tree, ledger, alloc.tenant, alloc.flavor, r, a)
            ledger.free[(alloc.flavor, r)] = ledger.free_of((alloc.flavor, r)) + a
    for key in ix.budget_keys(alloc.tenant, alloc.flavor):
        ledger.committed[key] = ledger.committed_of(key) - ix.alloc_remaining[alloc.request_id]
    ledger.removed.add(alloc.request_id)


def restore(ix: Index, ledger: Ledger, alloc: ActiveAllocation) -> None:
    """Undo `release` on a trial ledger."""
    for r, a in alloc.amounts.items():
        if a:
            add_usage(ix.tree, ledger, alloc.tenant, alloc.flavor, r, a)
            ledger.free[(alloc.flavor, r)] = ledger.free_of((alloc.flavor, r)) - a
    for key in ix.budget_keys(alloc.tenant, alloc.flavor):
        ledger.committed[key] = ledger.committed_of(key) + ix.alloc_remaining[alloc.request_id]
    ledger.removed.discard(alloc.request_id)
