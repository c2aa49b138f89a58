"""What the engine answers: one `Decision` per request, with machine-readable reason codes."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction


class Outcome(enum.StrEnum):
    ADMIT = "admit"  # fits in the tenant's own (subtree) quota
    BORROW = "borrow"  # fits only by using relatives' unused quota
    PREEMPT = "preempt"  # fits once the listed victims are evicted
    WAIT = "wait"  # stays pending; `reason` says why


class Reason(enum.StrEnum):
    """Why a request waits. Stable codes: the REST layer and the UI key on them."""

    WAITING_FOR_QUOTA = "waiting_for_quota"
    NO_PHYSICAL_FIT = "no_physical_fit"
    OVER_BUDGET = "over_budget"
    AWAITING_APPROVAL = "awaiting_approval"
    BLOCKED_BY_QUEUE_HEAD = "blocked_by_queue_head"
    EXCEEDS_MAX_POSSIBLE = "exceeds_max_possible"
    # Not in the list: the class was allowed when the request was made and revoked since.
    PRIORITY_CLASS_NOT_ALLOWED = "priority_class_not_allowed"


# Reasons that no change in usage can cure: such requests never block a StrictFIFO queue and have
# no queue position (Kueue keeps inadmissible workloads out of the heads too).
INADMISSIBLE = frozenset(
    {Reason.AWAITING_APPROVAL, Reason.EXCEEDS_MAX_POSSIBLE, Reason.PRIORITY_CLASS_NOT_ALLOWED}
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Loan:
    """Part of a request's amount taken from a relative's unused quota."""

    lender: str  # the tenant whose unused quota (or shared pool) is used
    resource: str
    amount: int
    ge: Fraction


@dataclass(frozen=True, slots=True, kw_only=True)
class Victim:
    request_id: str
    tenant: str
    priority: int
    amounts: Mapping[str, int]
    ge: Fraction
    cause: str  # "reclaim": its tenant borrows what the preemptor is owed; "priority": same tenant


@dataclass(frozen=True, slots=True, kw_only=True)
class FlavorAttempt:
    """What one of a request's flavors would give it, in the order the request names them."""

    flavor: str
    outcome: str  # an Outcome value, or "exceeds" when the flavor could never hold the request
    reason: Reason | None
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Warning:
    code: str  # "soft_budget_exceeded"
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    request_id: str
    tenant: str
    queue: str
    flavor: str
    outcome: Outcome
    reason: Reason | None  # set only when outcome is WAIT
    message: str
    amounts: Mapping[str, int]
    ge: Fraction
    expected_ge_hours: Fraction  # counted against budgets: GE x hours left in the month, at most
    borrowed: tuple[Loan, ...] = ()
    victims: tuple[Victim, ...] = ()
    warnings: tuple[Warning, ...] = ()
    queue_position: int | None = None  # 1 = head of its queue; None when inadmissible
    cohort_position: int | None = None  # among the pending requests of its whole tenant tree
    # Set only for requests naming several flavors: each flavor's answer, `flavor` being the one taken
    # (or, while waiting, the one whose reason is given).
    flavor_attempts: tuple[FlavorAttempt, ...] = ()

    @property
    def admitted(self) -> bool:
        return self.outcome is not Outcome.WAIT

    @property
    def borrowed_ge(self) -> Fraction:
        # Per resource the loans add up; the request's GE is the dominant resource, so is this.
        by_resource: dict[str, Fraction] = {}
        for loan in self.borrowed:
            by_resource[loan.resource] = by_resource.get(loan.resource, Fraction(0)) + loan.ge
        return max(by_resource.values(), default=Fraction(0))
