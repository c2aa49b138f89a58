"""`schedule`: one pass over every pending request, in Kueue's admission order.

Each queue offers its head (priority, then FIFO). Among heads the next one decided is, as in Kueue's
scheduler with fair sharing: a request that does not need to borrow first; then the lowest weighted
dominant share its tenant would have after admission; then higher priority; then earlier creation.
Decisions are applied to a working ledger, so later ones see earlier admissions and evictions.

Only heads whose tenant's usage an admission just changed are re-ranked (a head's share and "needs to
borrow" read its own tenant's usage alone), so a pass costs O(pending x (log queues + queues of the
tenants changed)).
"""

from __future__ import annotations

import heapq
from fractions import Fraction

from .accounting import apply
from .decision import Decision
from .engine import blocked, evaluate
from .model import PendingRequest, QueueingStrategy
from .quota import Ledger
from .snapshot import Index, Snapshot

RankKey = tuple[bool, bool, Fraction, int, int, str]


def schedule(*, snapshot: Snapshot) -> list[Decision]:
    """Decide every pending request once, admitting what fits; returns decisions in decision order.

    Pure: the snapshot is untouched. Requests that wait may fit on the next pass once this pass's
    preemptions have been carried out; call it again after applying the results.
    """
    ix = snapshot.index
    ledger = ix.base.child()
    decisions: list[Decision] = []
    pointer = dict.fromkeys(ix.queue_order, 0)
    version = dict.fromkeys(ix.queue_order, 0)
    heap: list[tuple[RankKey, str, int]] = []

    def offer(qid: str) -> None:
        """Put the queue's next admissible request on the heap, deciding inadmissible ones on the way."""
        ids = ix.queue_order[qid]
        i = pointer[qid]
        while i < len(ids) and ids[i] in ix.inadmissible:
            decisions.append(evaluate(ix, ledger, ix.pending[ids[i]], check_queue_head=False))
            i += 1
        pointer[qid] = i
        version[qid] += 1
        if i < len(ids):
            heapq.heappush(heap, (rank(ix, ledger, ix.pending[ids[i]]), qid, version[qid]))

    for qid in ix.queue_order:
        offer(qid)
    while heap:
        _, qid, ver = heapq.heappop(heap)
        if ver != version[qid]:
            continue  # re-ranked since this entry was pushed
        ids = ix.queue_order[qid]
        req = ix.pending[ids[pointer[qid]]]
        decision = evaluate(ix, ledger, req, check_queue_head=False)
        decisions.append(decision)
        pointer[qid] += 1
        if decision.admitted:
            apply(ix, ledger, req, decision)
            # A head's rank reads only its own tenant's usage, and `apply` changed the usage of the
            # admitted request's tenant and those above it, and of each victim's: only heads of those
            # tenants can rank differently now (the others' heap entries stand as they are).
            nodes = ix.tree.nodes
            changed = {*nodes[req.tenant].path}
            for victim in decision.victims:
                changed.update(nodes[ix.allocations[victim.request_id].tenant].path)
            for other in ix.queues_by_root[nodes[req.tenant].root]:
                ids = ix.queue_order[other]
                if (
                    other != qid
                    and pointer[other] < len(ids)
                    and ix.pending[ids[pointer[other]]].tenant in changed
                ):
                    offer(other)
            offer(qid)
        elif ix.queues[qid].strategy is QueueingStrategy.STRICT_FIFO:
            decisions.extend(blocked(ix, ix.pending[rid], req.id) for rid in ids[pointer[qid] :])
            pointer[qid] = len(ids)
        else:
            offer(qid)
    return decisions


def rank(ix: Index, ledger: Ledger, req: PendingRequest) -> RankKey:
    t, f = req.tenant, req.flavor
    tree = ix.tree
    borrows = any(
        ledger.u((t, f, r)) + a > tree.subtree.get((t, f, r), 0) for r, a in req.amounts.items() if a
    )
    weight = Fraction(ix.queues[req.queue].weight)
    # Weight 0 means an infinite share: after everyone else, as in Kueue.
    share = dominant_share(ix, ledger, t, req) / weight if weight else Fraction(0)
    return (borrows, not weight, share, -ix.classes[req.priority_class].value, req.created_order, req.id)


def fair_share(*, snapshot: Snapshot, tenant: str) -> Fraction:
    """The tenant's dominant share of its tree's pool that it borrows now (0 when not borrowing)."""
    return dominant_share(snapshot.index, snapshot.index.base, tenant)


def dominant_share(ix: Index, ledger: Ledger, tenant: str, req: PendingRequest | None = None) -> Fraction:
    """DRF in GE: the largest, over flavors, of what the tenant borrows / its tree's pool.

    Each flavor's borrowing is its dominant resource in GE, and the pool is the root's subtree quota
    in GE, so whole GPUs, MIG slices and HAMi shares of one tree compare on one scale. With `req`,
    the share the tenant would have once it is admitted.
    """
    tree = ix.tree
    root = tree.nodes[tenant].root
    borrowed: dict[str, Fraction] = {}
    pool: dict[str, Fraction] = {}
    for f, r in ix.places_of(tenant):
        unit = ix.ge_unit[(f, r)]
        k = (tenant, f, r)
        used = ledger.u(k)
        if req is not None and req.flavor == f:
            used += req.amounts.get(r, 0)
        b = max(0, used - tree.subtree.get(k, 0)) * unit
        borrowed[f] = max(borrowed.get(f, Fraction(0)), b)
        pool[f] = max(pool.get(f, Fraction(0)), tree.subtree.get((root, f, r), 0) * unit)
    return max((borrowed[f] / pool[f] for f in borrowed if pool[f]), default=Fraction(0))
