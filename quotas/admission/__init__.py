"""The admission engine: pure functions over plain frozen dataclasses, no Django.

Build a `Snapshot` from the database once (it indexes itself), then call `decide` for one arriving
request (the fast path) or `schedule` to walk every pending request when capacity, quotas or
priorities change. Semantics and a worked example: docs/admission.md.
"""

from .advance import advance, release
from .decision import INADMISSIBLE, Decision, FlavorAttempt, Loan, Outcome, Reason, Victim, Warning
from .engine import UnknownRequestError, decide
from .model import (
    ActiveAllocation,
    AdmissionPolicy,
    BorrowWithinCohort,
    BorrowWithinCohortPolicy,
    BudgetSpec,
    FlavorFungibility,
    FlavorResource,
    FlavorSpec,
    FungibilityPolicy,
    PendingRequest,
    PreemptionPolicy,
    PriorityClassSpec,
    QueueingStrategy,
    QueueSpec,
    QuotaSpec,
    TenantNode,
)
from .scheduling import fair_share, schedule
from .snapshot import Snapshot, SnapshotError

__all__ = [
    "INADMISSIBLE",
    "ActiveAllocation",
    "AdmissionPolicy",
    "BorrowWithinCohort",
    "BorrowWithinCohortPolicy",
    "BudgetSpec",
    "Decision",
    "FlavorAttempt",
    "FlavorFungibility",
    "FlavorResource",
    "FlavorSpec",
    "FungibilityPolicy",
    "Loan",
    "Outcome",
    "PendingRequest",
    "PreemptionPolicy",
    "PriorityClassSpec",
    "QueueSpec",
    "QueueingStrategy",
    "QuotaSpec",
    "Reason",
    "Snapshot",
    "SnapshotError",
    "TenantNode",
    "UnknownRequestError",
    "Victim",
    "Warning",
    "advance",
    "decide",
    "fair_share",
    "release",
    "schedule",
]
