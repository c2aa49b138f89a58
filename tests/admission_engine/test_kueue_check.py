"""gpuplatform's Kueue admission check as pure functions: the GE-hour estimate of a Workload and the
answer the check gives (quotas/kueue/check.py; docs/kueue.md, "The admission check")."""

from __future__ import annotations

from datetime import UTC, datetime
from fractions import Fraction

from quotas.kueue.check import Approval, CheckState, PodSetUse, decide, estimate

GPU = "nvidia.com/gpu"
H100 = {GPU: Fraction(1)}
# A HAMi share flavor: a GPU share is 1/4 GE per unit of gpu, 1/80000 GE per MiB of gpumem.
SHARED = {GPU: Fraction(1, 4), "nvidia.com/gpumem": Fraction(1, 80000)}
NOW = datetime(2026, 12, 3, 18, 0, tzinfo=UTC)
MONTH_END = datetime(2027, 1, 1, tzinfo=UTC)


def pod_set(count: int, requests: dict[str, str], flavor: str = "h100", name: str = "main") -> PodSetUse:
    return PodSetUse(name=name, count=count, requests=requests, flavors=dict.fromkeys(requests, flavor))


def test_ge_hours_are_pods_times_ge_per_pod_times_the_maximum_execution_time():
    # 3 pods x 2 H100 each = 6 GE; 7200 s = 2 h; 6 x 2 = 12 GE-h
    est = estimate(
        pod_sets=[pod_set(3, {GPU: "2", "cpu": "4"})],
        ge_per_unit={"h100": H100},
        max_execution_seconds=7200,
        default_hours=Fraction(24),
    )
    assert est.ge == {"h100": Fraction(6)}
    assert est.hours == 2 and est.from_max_execution
    assert est.total_ge_hours == 12


def test_without_a_maximum_execution_time_the_default_duration_counts():
    # 1 pod x 1 H100 = 1 GE x the default 24 h = 24 GE-h
    est = estimate(
        pod_sets=[pod_set(1, {GPU: "1"})],
        ge_per_unit={"h100": H100},
        max_execution_seconds=None,
        default_hours=Fraction(24),
    )
    assert est.total_ge_hours == 24 and not est.from_max_execution


def test_pod_sets_on_one_flavor_add_up_and_ge_is_the_dominant_resource():
    # launcher: 1 pod x 1 share; workers: 2 pods x 1 share with 40000 MiB each.
    # gpu: 3 shares x 1/4 = 0.75 GE; gpumem: 80000 MiB x 1/80000 = 1 GE -> the dominant, 1 GE
    est = estimate(
        pod_sets=[
            pod_set(1, {GPU: "1"}, flavor="shared", name="launcher"),
            pod_set(2, {GPU: "1", "nvidia.com/gpumem": "40000"}, flavor="shared", name="workers"),
        ],
        ge_per_unit={"shared": SHARED},
        max_execution_seconds=3600,
        default_hours=Fraction(24),
    )
    assert est.amounts == {"shared": {GPU: 3, "nvidia.com/gpumem": 80000}}
    assert est.ge == {"shared": Fraction(1)}


def test_resources_on_flavors_gpuplatform_does_not_know_count_nothing():
    # cpu on Kueue's default flavor, a bad quantity: nothing counted, no error
    est = estimate(
        pod_sets=[pod_set(2, {"cpu": "8"}, flavor="default"), pod_set(1, {GPU: "lots"})],
        ge_per_unit={"h100": H100},
        max_execution_seconds=3600,
        default_hours=Fraction(24),
    )
    assert est.ge == {} and est.total_ge_hours == 0


def _est(ge: int = 2, hours: int = 10):
    return estimate(
        pod_sets=[pod_set(ge, {GPU: "1"})],
        ge_per_unit={"h100": H100},
        max_execution_seconds=hours * 3600,
        default_hours=Fraction(24),
    )


def _decide(**overrides):
    args = {
        "estimate": _est(),
        "over_budget": None,
        "needs_approval": False,
        "approval": Approval.NOT_REQUIRED,
        "approvers": "a tenant-admin of research or acme (above vision) or a platform-admin",
        "retry_seconds": 300,
        "now": NOW,
        "month_end": MONTH_END,
    }
    return decide(**{**args, **overrides})


def test_within_budget_is_ready_and_reserves():
    verdict = _decide()
    # 2 GE x 10 h = 20 GE-h
    assert verdict.state is CheckState.READY and verdict.reserve
    assert verdict.message == "Within budget: 20 GE-h reserved (2 GE x 10 h)."


def test_over_budget_is_retry_with_the_reason_and_when_it_may_pass():
    verdict = _decide(over_budget="20 GE-h expected + 90 GE-h burned or committed exceeds the 100 GE-h ...")
    assert verdict.state is CheckState.RETRY and not verdict.reserve
    assert verdict.requeue_after_seconds == 300
    assert verdict.message.startswith("Over budget: 20 GE-h expected + 90 GE-h")
    assert "checked again after 2026-12-03 18:05 UTC" in verdict.message
    assert "budgets start afresh on 2027-01-01" in verdict.message


def test_over_the_approval_threshold_is_pending_awaiting_approval_by_whom():
    verdict = _decide(needs_approval=True, approval=Approval.AWAITING)
    assert verdict.state is CheckState.PENDING and not verdict.reserve
    assert verdict.message.startswith(
        "awaiting approval by a tenant-admin of research or acme (above vision) or a platform-admin"
    )


def test_approved_passes_and_rejected_is_rejected_with_the_note():
    assert _decide(needs_approval=True, approval=Approval.APPROVED).state is CheckState.READY
    verdict = _decide(needs_approval=True, approval=Approval.REJECTED, rejection="Rejected by rita: not now.")
    assert (verdict.state, verdict.message) == (CheckState.REJECTED, "Rejected by rita: not now.")


def test_budget_is_judged_before_approval_and_soft_budgets_only_warn():
    # over a hard budget and awaiting approval: Retry (quota released), approval asked once it fits
    assert _decide(over_budget="x", needs_approval=True, approval=Approval.AWAITING).state is CheckState.RETRY
    verdict = _decide(soft_warnings=["25 GE-h expected ... exceeds the 10 GE-h monthly budget of 'vision'"])
    assert verdict.state is CheckState.READY and verdict.warnings
    assert "Soft budget exceeded" in verdict.message
