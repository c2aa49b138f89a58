"""Deciding one request against a ledger: the checks in order, and applying what was decided."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

from .accounting import fits
from .decision import Decision, FlavorAttempt, Loan, Outcome, Reason, Victim, Warning
from .model import FungibilityPolicy, PendingRequest, QueueingStrategy
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
    structural = ix.inadmissible.get(req.id)
    if structural is not None or (
        check_queue_head and ix.queues[req.queue].strategy is QueueingStrategy.STRICT_FIFO
    ):
        ge = ix.request_ge[req.id]
        expected = ge * ix.expected_hours(req)
        if structural is not None:
            return _decision(
                ix,
                req,
                req.flavor,
                ge,
                expected,
                Outcome.WAIT,
                structural,
                _structural_message(ix, req, structural),
            )
        head = ix.queue_head[req.queue]
        if head != req.id:
            message = f"StrictFIFO queue {req.queue!r} waits for {head!r}"
            return _decision(
                ix, req, req.flavor, ge, expected, Outcome.WAIT, Reason.BLOCKED_BY_QUEUE_HEAD, message
            )
    if not req.fallback_flavors:
        return on_flavor(ix, ledger, req, req.flavor)[0]
    return _choose_flavor(ix, ledger, req)


# Kueue's flavor assignment modes, worst to best (flavorassigner's preemptionMode).
NO_FIT, NO_CANDIDATES, PREEMPT, RECLAIM, FIT = range(5)


def _choose_flavor(ix: Index, ledger: Ledger, req: PendingRequest) -> Decision:
    """Kueue's flavor fungibility: try the request's flavors in order, stop at the first one the
    queue's policy accepts, else take the best seen (fit over reclaim over preempt, then not
    borrowing over borrowing)."""
    fungibility = ix.queues[req.queue].fungibility
    viable = set(ix.viable_flavors[req.id])
    attempts: list[FlavorAttempt] = []
    best: tuple[Decision, int, int] | None = None
    for f in req.flavor_choices:
        if f not in viable:
            message = f"{f!r} could never hold this request"
            attempts.append(
                FlavorAttempt(
                    flavor=f, outcome="exceeds", reason=Reason.EXCEEDS_MAX_POSSIBLE, message=message
                )
            )
            continue
        option = on_flavor(ix, ledger, req, f)
        decision, mode, borrows = option
        attempts.append(
            FlavorAttempt(
                flavor=f, outcome=str(decision.outcome), reason=decision.reason, message=decision.message
            )
        )
        stop = mode not in (NO_FIT, NO_CANDIDATES)
        if mode in (PREEMPT, RECLAIM) and fungibility.when_can_preempt is FungibilityPolicy.TRY_NEXT_FLAVOR:
            stop = False
        if borrows and fungibility.when_can_borrow is FungibilityPolicy.TRY_NEXT_FLAVOR:
            stop = False
        if stop:
            best = option
            break
        if best is None or _preferred(option, best):
            best = option
    for f in req.flavor_choices[len(attempts) :]:
        attempts.append(FlavorAttempt(flavor=f, outcome="not_tried", reason=None, message="not needed"))
    assert best is not None  # viable is never empty here: an all-exceeding request is inadmissible
    decision = best[0]
    message = decision.message
    if not decision.admitted:
        message = "no flavor can take it now: " + "; ".join(
            f"{a.flavor}: {a.message}" for a in attempts if a.outcome != "not_tried"
        )
    return dataclasses.replace(decision, message=message, flavor_attempts=tuple(attempts))


def _preferred(a: tuple[Decision, int, int], b: tuple[Decision, int, int]) -> bool:
    """Kueue's isPreferred under BorrowingOverPreemption: a strictly better than b."""
    if a[1] != b[1]:
        return a[1] > b[1]
    return a[2] < b[2]


def check_budgets(
    ix: Index, ledger: Ledger, t: str, f: str, expected: Fraction
) -> tuple[str | None, list[Warning]]:
    """``expected`` GE-hours of tenant ``t`` on flavor ``f`` against every budget above it: the first
    hard budget it would exceed (its sentence), and the soft ones it exceeds. Kueue Workloads are
    checked by the same rule (quotas/kueue_check/)."""
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
                return text, warnings
            warnings.append(Warning(code="soft_budget_exceeded", message=text))
    return None, warnings


def on_flavor(ix: Index, ledger: Ledger, req: PendingRequest, f: str) -> tuple[Decision, int, int]:
    """The request decided on one of its flavors: (decision, Kueue's mode, 1 if it borrows)."""
    t = req.tenant
    ge = ix.ge_on(req, f)
    expected = ge * ix.expected_hours(req)

    def wait(reason: Reason, message: str, mode: int) -> tuple[Decision, int, int]:
        return _decision(ix, req, f, ge, expected, Outcome.WAIT, reason, message), mode, 0

    over, warnings = check_budgets(ix, ledger, t, f, expected)
    if over is not None:
        return wait(Reason.OVER_BUDGET, over, NO_FIT)

    places = [(r, a) for r, a in sorted(req.amounts.items()) if a > 0]
    quota_ok, physical_ok = fits(ix, ledger, t, f, places)
    if quota_ok and physical_ok:
        loans = _loans(ix, ledger, req, f, places)
        outcome = Outcome.BORROW if loans else Outcome.ADMIT
        message = _admit_message(req, f, loans)
        decision = _decision(
            ix, req, f, ge, expected, outcome, None, message, loans=loans, warnings=tuple(warnings)
        )
        return decision, FIT, int(bool(loans))

    plan = find_victims(ix, ledger, req, places, flavor=f)
    if plan is not None:
        victims, trial = plan
        loans = _loans(ix, trial, req, f, places)
        # Victims may belong to other tenants: count them, never name them.
        message = (
            f"admitted on {f!r} by preempting {len(victims)} request(s) of lower priority "
            "or beyond their quota"
        )
        decision = _decision(
            ix,
            req,
            f,
            ge,
            expected,
            Outcome.PREEMPT,
            None,
            message,
            loans=loans,
            victims=victims,
            warnings=tuple(warnings),
        )
        mode = RECLAIM if all(v.cause != "priority" for v in victims) else PREEMPT
        return decision, mode, int(bool(loans))
    if not quota_ok:
        short = _shortfall(ix, ledger, req, f, places)
        return wait(Reason.WAITING_FOR_QUOTA, f"not enough quota for {t!r} in {f!r}: {short}", NO_CANDIDATES)
    free = ", ".join(f"{r} {ledger.free_of((f, r))} free of {a} asked" for r, a in places)
    return wait(
        Reason.NO_PHYSICAL_FIT,
        f"quota allows it but {f!r} has too little free capacity: {free}",
        NO_CANDIDATES,
    )


def _loans(
    ix: Index, ledger: Ledger, req: PendingRequest, f: str, places: list[tuple[str, int]]
) -> tuple[Loan, ...]:
    """Attribute what the request borrows to lenders, walking up the tree.

    Quota in a cohort is pooled, so attribution is a convention, not a constraint: at each ancestor,
    what is taken there is credited to the siblings with the most unused lendable quota first (then
    by id), and what they cannot cover to the ancestor's own shared nominal.
    """
    tree = ix.tree
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
    flavor: str,
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
        flavor=flavor,
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
    return _decision(ix, req, req.flavor, ge, expected, Outcome.WAIT, Reason.BLOCKED_BY_QUEUE_HEAD, message)


def _admit_message(req: PendingRequest, f: str, loans: tuple[Loan, ...]) -> str:
    if not loans:
        return f"admitted within the quota of {req.tenant!r} in {f!r}"
    parts = ", ".join(f"{loan.amount} {loan.resource} from {loan.lender!r}" for loan in loans)
    return f"admitted on {f!r} by borrowing {parts}"


def _structural_message(ix: Index, req: PendingRequest, reason: Reason) -> str:
    if reason is Reason.AWAITING_APPROVAL:
        return "the request needs approval before it can be admitted"
    if reason is Reason.PRIORITY_CLASS_NOT_ALLOWED:
        return f"tenant {req.tenant!r} may not use priority class {req.priority_class!r}"
    limits = []
    for f in req.flavor_choices:
        for r, a in sorted(req.amounts.items()):
            if not a:
                continue
            where = f" in {f!r}" if req.fallback_flavors else ""
            if not ix.tree.has_quota(req.tenant, f, r):
                limits.append(f"{r}: no quota in {f!r}")
            else:
                most = ix.tree.potential(req.tenant, f, r)
                if a > most:
                    limits.append(f"{r}: asked {a}, at most {most} could ever be granted{where}")
    return "exceeds what any quota could hold: " + "; ".join(limits)


def _shortfall(ix: Index, ledger: Ledger, req: PendingRequest, f: str, places: list[tuple[str, int]]) -> str:
    parts = []
    for r, a in places:
        avail = available(ix.tree, ledger, req.tenant, f, r)
        if a > avail:
            parts.append(f"{r} asked {a}, {max(0, avail)} available")
    return ", ".join(parts)


def _num(value: Fraction) -> str:
    """A GE figure for messages: exact when whole, two decimals otherwise."""
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):.2f}"
