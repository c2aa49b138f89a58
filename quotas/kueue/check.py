"""gpuplatform as the controller of its AdmissionCheck ``gpuplatform-budget``: what a Kueue Workload
commits in GE-hours, and what the check answers (docs/kueue.md, "The admission check"). Pure.

The estimate: for each pod set, ``count`` x its per-pod requests of the resources a gpuplatform
flavor counts, on the flavor Kueue assigned them; per flavor, GE is the engine's dominant-resource
rule (``max`` over resources of amount x GE per unit); GE-hours is that GE x the Workload's
``maximumExecutionTimeSeconds`` (Kueue evicts it then, so it can never burn more), or, without one,
the default duration (``KUEUE_CHECK_DEFAULT_HOURS``).

The answer follows Kueue's protocol (keps/993-two-phase-admission): Pending keeps the quota Kueue
reserved while we wait (an approval); Ready admits; Retry makes Kueue evict the Workload, release its
quota and requeue it after ``requeueAfterSeconds`` (over budget: holding quota for days while the
budget is short would starve the cohort); Rejected deactivates it (an approver said no).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from fractions import Fraction

from gpuplatform.quantity import QuantityError, parse_quantity

BUDGET_CHECK = "gpuplatform-budget"


class CheckState(enum.StrEnum):
    """Kueue's AdmissionCheckState values."""

    PENDING = "Pending"
    READY = "Ready"
    RETRY = "Retry"
    REJECTED = "Rejected"


@dataclass(frozen=True, slots=True)
class PodSetUse:
    name: str
    count: int
    requests: Mapping[str, str]  # per pod, as the Workload states them
    flavors: Mapping[str, str]  # resource -> the flavor Kueue assigned


@dataclass(frozen=True, slots=True)
class Estimate:
    amounts: dict[str, dict[str, Fraction]]  # flavor -> resource -> units, all pod sets
    ge: dict[str, Fraction]  # flavor -> GE
    hours: Fraction
    from_max_execution: bool  # False: the default duration was used

    @property
    def ge_hours(self) -> dict[str, Fraction]:
        return {f: g * self.hours for f, g in self.ge.items()}

    @property
    def total_ge(self) -> Fraction:
        return sum(self.ge.values(), Fraction(0))

    @property
    def total_ge_hours(self) -> Fraction:
        return self.total_ge * self.hours


def _units(value: str) -> Fraction | None:
    try:
        return Fraction(parse_quantity(value))
    except QuantityError:
        return None


def estimate(
    *,
    pod_sets: Sequence[PodSetUse],
    ge_per_unit: Mapping[str, Mapping[str, Fraction]],
    max_execution_seconds: int | None,
    default_hours: Fraction,
) -> Estimate:
    """GE and GE-hours per gpuplatform flavor. Resources on flavors gpuplatform does not know (cpu
    and memory on Kueue's default flavor) and unreadable quantities count nothing."""
    amounts: dict[str, dict[str, Fraction]] = {}
    for pod_set in pod_sets:
        for resource, flavor in sorted(pod_set.flavors.items()):
            units = ge_per_unit.get(flavor)
            if units is None or resource not in units or resource not in pod_set.requests:
                continue
            per_pod = _units(pod_set.requests[resource])
            if per_pod is None:
                continue
            by_resource = amounts.setdefault(flavor, {})
            by_resource[resource] = by_resource.get(resource, Fraction(0)) + per_pod * max(pod_set.count, 0)
    ge = {
        flavor: max((ge_per_unit[flavor][r] * a for r, a in by_resource.items()), default=Fraction(0))
        for flavor, by_resource in amounts.items()
    }
    if max_execution_seconds:
        hours, exact = Fraction(max_execution_seconds, 3600), True
    else:
        hours, exact = default_hours, False
    return Estimate(amounts=amounts, ge=ge, hours=hours, from_max_execution=exact)


class Approval(enum.StrEnum):
    NOT_REQUIRED = "not-required"
    AWAITING = "awaiting"
    APPROVED = "approved"
    REJECTED = "rejected"


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    state: CheckState
    message: str
    code: str  # "within_budget", "over_budget", "awaiting_approval", "rejected", "unattributed"
    reserve: bool = False  # Ready: reserve the estimate against the budgets
    requeue_after_seconds: int | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)


def num(value: Fraction | Decimal) -> str:
    """A GE or GE-hour figure as people read it: at most three decimals, no trailing zeros."""
    text = f"{float(value):,.3f}".rstrip("0").rstrip(".")
    return text or "0"


def decide(
    *,
    estimate: Estimate,
    over_budget: str | None,
    soft_warnings: Sequence[str] = (),
    needs_approval: bool,
    approval: Approval,
    approvers: str,
    rejection: str = "",
    retry_seconds: int,
    now: datetime,
    month_end: datetime,
) -> Verdict:
    """What the check answers now. ``over_budget`` is the engine's sentence for the first hard
    budget the estimate would exceed (None: within every budget above the tenant); ``approvers``
    says who may approve ("an admin above vision (research, acme) or a platform-admin")."""
    if approval is Approval.REJECTED:
        return Verdict(
            state=CheckState.REJECTED, message=rejection or "Rejected by an approver.", code="rejected"
        )
    if over_budget is not None:
        retry_at = (now + timedelta(seconds=retry_seconds)).astimezone(UTC)
        message = (
            f"Over budget: {over_budget}. It may pass once a budget above it is raised or GE-hours are "
            f"freed: checked again after {retry_at:%Y-%m-%d %H:%M} UTC; budgets start afresh on "
            f"{month_end:%Y-%m-%d}."
        )
        return Verdict(
            state=CheckState.RETRY, message=message, code="over_budget", requeue_after_seconds=retry_seconds
        )
    if needs_approval and approval is not Approval.APPROVED:
        return Verdict(
            state=CheckState.PENDING,
            message=f"awaiting approval by {approvers}: {num(estimate.total_ge)} GE for "
            f"{num(estimate.hours)} h crosses the flavor's approval threshold.",
            code="awaiting_approval",
        )
    message = (
        f"Within budget: {num(estimate.total_ge_hours)} GE-h reserved "
        f"({num(estimate.total_ge)} GE x {num(estimate.hours)} h"
        + ("" if estimate.from_max_execution else ", the default duration")
        + ")."
    )
    if soft_warnings:
        message += " Soft budget exceeded: " + "; ".join(soft_warnings) + "."
    return Verdict(
        state=CheckState.READY,
        message=message,
        code="within_budget",
        reserve=True,
        warnings=tuple(soft_warnings),
    )
