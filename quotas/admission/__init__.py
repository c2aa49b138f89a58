"""The admission engine: pure functions over plain frozen dataclasses, no Django.

Build a `Snapshot` from the database once (it indexes itself), then call `decide` for one arriving
request (the fast path) or `schedule` to walk every pending request when capacity, quotas or
priorities change. Semantics and a worked example: docs/admission.md.
"""

from .decision import INADMISSIBLE, Decision, Loan, Outcome, Reason, Victim, Warning
from .engine import UnknownRequestError, decide
from .model import (
    ActiveAllocation,
    AdmissionPolicy,
    Budget,
    CapacityRequest,
    Flavor,
    FlavorResource,
    PreemptionPolicy,
    PriorityClass,
    Queue,
    QueueingStrategy,
    Quota,
    Tenant,
)
from .scheduling import fair_share, schedule
from .snapshot import Snapshot, SnapshotError
from .transitions import advance, release

__all__ = [
    "INADMISSIBLE",
    "ActiveAllocation",
    "AdmissionPolicy",
    "Budget",
    "CapacityRequest",
    "Decision",
    "Flavor",
    "FlavorResource",
    "Loan",
    "Outcome",
    "PreemptionPolicy",
    "PriorityClass",
    "Queue",
    "QueueingStrategy",
    "Quota",
    "Reason",
    "Snapshot",
    "SnapshotError",
    "Tenant",
    "UnknownRequestError",
    "Victim",
    "Warning",
    "advance",
    "decide",
    "fair_share",
    "release",
    "schedule",
]
