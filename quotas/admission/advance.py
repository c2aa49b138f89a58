"""Moving a snapshot forward: what the service does in the database, done on plain data.

The lead's services persist decisions; these helpers give tests, benchmarks and simulations the
same next state without a database.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from .decision import Decision
from .model import ActiveAllocation
from .snapshot import Snapshot


def advance(*, snapshot: Snapshot, decisions: Iterable[Decision]) -> Snapshot:
    """The snapshot once the decisions are carried out: victims evicted, admitted requests active.

    Admitted requests get admission orders after the newest active one, in decision order. Victims
    are dropped, not requeued: whether an evicted request goes back to its queue is the service's call.
    """
    ix = snapshot.index
    decided = list(decisions)
    free = {f: dict(per_resource) for f, per_resource in snapshot.free.items()}
    evicted = {v.request_id for d in decided for v in d.victims}
    for rid in sorted(evicted):
        _give_back(free, ix.allocations[rid])
    active = [a for a in snapshot.active if a.request_id not in evicted]
    order = max((a.admitted_order for a in snapshot.active), default=0)
    admitted: set[str] = set()
    for d in decided:
        if not d.admitted:
            continue
        req = ix.pending[d.request_id]
        order += 1
        admitted.add(req.id)
        alloc = ActiveAllocation(
            request_id=req.id,
            tenant=req.tenant,
            flavor=d.flavor,
            amounts=dict(req.amounts),
            priority_class=req.priority_class,
            admitted_order=order,
            ends_at=None if req.duration is None else snapshot.now + req.duration,
            created_order=req.created_order,
        )
        active.append(alloc)
        per_resource = free.setdefault(d.flavor, {})
        for r, a in req.amounts.items():
            per_resource[r] = per_resource.get(r, 0) - a
    pending = tuple(p for p in snapshot.pending if p.id not in admitted)
    return dataclasses.replace(snapshot, active=tuple(active), pending=pending, free=free)


def release(*, snapshot: Snapshot, request_ids: Iterable[str]) -> Snapshot:
    """The snapshot once the given allocations have ended: their capacity is free again."""
    ix = snapshot.index
    gone = set(request_ids)
    free = {f: dict(per_resource) for f, per_resource in snapshot.free.items()}
    for rid in sorted(gone):
        _give_back(free, ix.allocations[rid])
    active = tuple(a for a in snapshot.active if a.request_id not in gone)
    return dataclasses.replace(snapshot, active=active, free=free)


def _give_back(free: dict[str, dict[str, int]], alloc: ActiveAllocation) -> None:
    per_resource = free.setdefault(alloc.flavor, {})
    for r, a in alloc.amounts.items():
        per_resource[r] = per_resource.get(r, 0) + a
