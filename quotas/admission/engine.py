"""Deciding one request against a ledger: the checks in order, and applying what was decided."""

from __future__ import annotations

from fractions import Fraction

from .accounting import fits
from .decision import Decision, Loan, Outcome, Reason, Victim, Warning
from .model import PendingRequest, QueueingStrategy
from .preemption import find_victims
from .quota import Ledger, available
from .snapshot import Index, Snapshot


class UnknownRequestError(LookupError):
    """`decide` was asked about a request that is not pending in the snapshot."""


def decide(*, snapshot: Snapshot, request_id: str) -> Decision:
    """Decide one pending request against the snapshot as it is (the fast path).

    Does not change the snapshot. A StrictFIFO request behind an admissible head waits for it.
    """
    ix = snapshot.index
    req = ix.pending.get(request_id)
    if req is None:
        raise UnknownRequestError(request_id)
    return evaluate(ix, ix.base, req, check_queue_head=True)


def evaluate(ix: Index, ledger: Ledger, req: PendingRequest, *, check_queue_head: bool) -> Decision:
    """The checks, cheapest and least curable first; never writes to `ledger`."""
    t, f = req.tenant, req.flavor
    ge = ix.request_ge[req.id]
    expected = ge * ix.expected_hours(req)

    def wait(reason: Reason, message: str, warnings: tuple[Warning, ...] = ()) -> Decision:
        return _decision(ix, req, ge, expected, Outcome.WAIT, reason, message, warnings=warnings)

    structural = ix.inadmissible.get(req.id)
    if structural is not None:
        return wait(structural, _structural_message(ix, req, structural))
    if check_queue_head and ix.queues[req.queue].strategy is QueueingStrategy.STRICT_FIFO:
        head = ix.queue_head[req.queue]
        if head != req.id:
            return wait(Reason.BLOCKED_BY_QUEUE_HEAD, f"StrictFIFO queue {req.queue!r} waits for {head!r}")

    warnings: list[Warning] = []
    for key in ix.budget_keys(t, f):
        budget = ix.budgets[key]
        committed = ledger.committed_of(key)
        if committed + expected > budget.limit_ge_hours:
            scope = f"flavor {f!r}" if key[1] else "all flavors"
            text = (
                f"{_num(expected)} GE-h expected + {_num(committed)} GE-h burned or committed exceeds the "
                f"{_num(budget.limit_ge_hours)} GE-h monthly budget of {key[0]!r} ({scope}"
                + (f", which covers {t!r})" if key[0] != t else ")")
            )
            if budget.hard:
                return wait(Reason.OVER_BUDGET, text)
            warnings.append(Warning(code="soft_budget_exceeded", message=text))

    places = [(r, a) for r, a in sorted(req.amounts.items()) if a > 0]
    quota_ok, physical_ok = fits(ix, ledger, t, f, places)
    if quota_ok and physical_ok:
        loans = _loans(ix, ledger, req, places)
        outcome = Outcome.BORROW if loans else Outcome.ADMIT
        message = _admit_message(ix, req, loans)
        return _decision(ix, req, ge, expected, outcome, None, message, loans=loans, warnings=tuple(warnings))

    plan = find_victims(ix, ledger, req, places)
    if plan is not None:
        victims, trial = plan
        loans = _loans(ix, trial, req, places)
        # Victims may belong to other tenants: count them, never name them.
        message = f"admitted by preempting {len(victims)} request(s) of lower priority or beyond their quota"
        return _decision(
            ix,
            req,
            ge,
            expected,
            Outcome.PREEMPT,
            None,
            message,
            loans=loans,
            victims=victims,
            warnings=tuple(warnings),
        )
    if not quota_ok:
        short = _shortfall(ix, ledger, req, places)
        return wait(Reason.WAITING_FOR_QUOTA, f"not enough quota for {t!r} in {f!r}: {short}")
    free = ", ".join(f"{r} {ledger.free_of((f, r))} free of {a} asked" for r, a in places)
    return wait(Reason.NO_PHYSICAL_FIT, f"quota allows it but {f!r} has too little free capacity: {free}")


def _loans(ix: Index, ledger: Ledger, req: PendingRequest, places: list[tuple[str, int]]) -> tuple[Loan, ...]:
    """Attribute what the request borrows to lenders, walking up the tree.

    Quota in a cohort is pooled, so attribution is a convention, not a constraint: at each ancestor,
    what is taken there is credited to the siblings with the most unused lendable quota first (then
    by id), and what they cannot cover to the ancestor's own shared nominal.
    """
    tree, f = ix.tree, req.flavor
    loans: list[Loan] = []
    for r, a in places:
        k = (req.tenant, f, r)
        used, sq = ledger.u(k), tree.subtree.get(k, 0)
        remaining = max(0, used + a - sq) - max(0, used - sq)
        child, parent = req.tenant, tree.nodes[req.tenant].parent
        credited: dict[str, int] = {}
        while remaining > 0 and parent is not None:
            pk = (parent, f, r)
            level_free = tree.subtree.get(pk, 0) - ledger.u(pk) - _unused_lendable(ix, ledger, child, f, r)
            take = min(remaining, max(0, level_free))
            remaining -= take
            siblings = sorted(
                (
                    (_unused_lendable(ix, ledger, s, f, r), s)
                    for s in tree.nodes[parent].children
                    if s != child
                ),
                key=lambda pair: (-pair[0], pair[1]),
            )
            for unused, s in siblings:
                part = min(take, unused)
                if part > 0:
                    credited[s] = credited.get(s, 0) + part
                    take -= part
            if take > 0:
                credited[parent] = credited.get(parent, 0) + take
            child, parent = parent, tree.nodes[parent].parent
        if remaining > 0:  # only when the tree is already over-admitted (quota was cut)
            root = tree.nodes[req.tenant].root
            credited[root] = credited.get(root, 0) + remaining
        unit = ix.ge_unit[(f, r)]
        loans.extend(
            Loan(lender=s, resource=r, amount=v, ge=v * unit) for s, v in sorted(credited.items()) if v
        )
    return tuple(loans)


def _unused_lendable(ix: Index, ledger: Ledger, tenant: str, flavor: str, resource: str) -> int:
    k = (tenant, flavor, resource)
    g = ix.tree.guaranteed.get(k, 0)
    return max(0, ix.tree.subtree.get(k, 0) - g - max(0, ledger.u(k) - g))


def _decision(
    ix: Index,
    req: PendingRequest,
    ge: Fraction,
    expected: Fraction,
    outcome: Outcome,
    reason: Reason | None,
    message: str,
    *,
    loans: tuple[Loan, ...] = (),
    victims: tuple[Victim, ...] = (),
    warnings: tuple[Warning, ...] = (),
) -> Decision:
    return Decision(
        request_id=req.id,
        tenant=req.tenant,
        queue=req.queue,
        flavor=req.flavor,
        outcome=outcome,
        reason=reason,
        message=message,
        amounts=dict(req.amounts),
        ge=ge,
        expected_ge_hours=expected,
        borrowed=loans,
        victims=victims,
        warnings=warnings,
        queue_position=ix.queue_position.get(req.id),
        cohort_position=ix.cohort_position.get(req.id),
    )


def blocked(ix: Index, req: PendingRequest, head: str) -> Decision:
    """The decision for a request behind a StrictFIFO head that could not be admitted."""
    ge = ix.request_ge[req.id]
    structural = ix.inadmissible.get(req.id)
    if structural is not None:
        return evaluate(ix, ix.base, req, check_queue_head=False)
    message = f"StrictFIFO queue {req.queue!r} waits for {head!r}"
    expected = ge * ix.expected_hours(req)
    return _decision(ix, req, ge, expected, Outcome.WAIT, Reason.BLOCKED_BY_QUEUE_HEAD, message)


def _admit_message(ix: Index, req: PendingRequest, loans: tuple[Loan, ...]) -> str:
    if not loans:
        return f"admitted within the quota of {req.tenant!r} in {req.flavor!r}"
    parts = ", ".join(f"{loan.amount} {loan.resource} from {loan.lender!r}" for loan in loans)
    return f"admitted by borrowing {parts}"


def _structural_message(ix: Index, req: PendingRequest, reason: Reason) -> str:
    if reason is Reason.AWAITING_APPROVAL:
        return "the request needs approval before it can be admitted"
    if reason is Reason.PRIORITY_CLASS_NOT_ALLOWED:
        return f"tenant {req.tenant!r} may not use priority class {req.priority_class!r}"
    limits = []
    for r, a in sorted(req.amounts.items()):
        if not a:
            continue
        if not ix.tree.has_quota(req.tenant, req.flavor, r):
            limits.append(f"{r}: no quota in {req.flavor!r}")
        else:
            most = ix.tree.potential(req.tenant, req.flavor, r)
            if a > most:
                limits.append(f"{r}: asked {a}, at most {most} could ever be granted")
    return "exceeds what any quota could hold: " + "; ".join(limits)


def _shortfall(ix: Index, ledger: Ledger, req: PendingRequest, places: list[tuple[str, int]]) -> str:
    parts = []
    for r, a in places:
        avail = available(ix.tree, ledger, req.tenant, req.flavor, r)
        if a > avail:
            parts.append(f"{r} asked {a}, {max(0, avail)} available")
    return ", ".join(parts)


def _num(value: Fraction) -> str:
    """A GE figure for messages: exact when whole, two decimals otherwise."""
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):.2f}"
