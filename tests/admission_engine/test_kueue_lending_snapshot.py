"""Kueue's cache snapshot with lending limits, ported: pkg/cache/scheduler/snapshot_test.go
(kubernetes-sigs/kueue, TestSnapshotAddRemoveWorkloadWithLendingLimit), and one scheduler case on
lending limits (pkg/scheduler/scheduler_test.go).

lend-a: 10 nominal, lendingLimit 4 (keeps 6); lend-b: 10 nominal, lendingLimit 6 (keeps 4); the
cohort `lend` pools 4 + 6 = 10. Workloads: lend-a-1 (1), lend-a-2 (9), lend-a-3 (6), lend-b-1 (4).
Usage of the cohort is what its queues use beyond what they keep.
"""

from __future__ import annotations

import pytest

from quotas.admission import Outcome, Reason, decide, release

from .kueue import GPU, admitted, cluster, incoming, quota

TREE = {"lend": None, "lend-a": "lend", "lend-b": "lend"}
QUOTAS = (quota("lend-a", 10, lending=4), quota("lend-b", 10, lending=6))
ACTIVE = (
    admitted("lend-a-1", "lend-a", 1),
    admitted("lend-a-2", "lend-a", 9),
    admitted("lend-a-3", "lend-a", 6),
    admitted("lend-b-1", "lend-b", 4),
)


def usage(snap, tenant):
    return snap.index.base.u((tenant, "h100", GPU))


@pytest.mark.parametrize(
    ("case", "removed", "lend_a", "lend_b", "cohort"),
    [
        # lend-a 7 = 6 kept + 1 in the pool; lend-b 4 = all kept
        ("remove workload, but still using quota over GuaranteedQuota", ["lend-a-2"], 7, 4, 1),
        ("remove wokload, using same quota as GuaranteedQuota", ["lend-a-1", "lend-a-2"], 6, 4, 0),
        ("remove workload, using less quota than GuaranteedQuota", ["lend-a-2", "lend-a-3"], 1, 4, 0),
    ],
)
def test_snapshot_usage_with_lending_limit(case, removed, lend_a, lend_b, cohort):
    """snapshot_test.go, TestSnapshotAddRemoveWorkloadWithLendingLimit: the named case."""
    snap = release(snapshot=cluster(tree=TREE, quotas=QUOTAS, active=ACTIVE), request_ids=removed)
    assert (usage(snap, "lend-a"), usage(snap, "lend-b"), usage(snap, "lend")) == (lend_a, lend_b, cohort)
    assert snap.index.tree.subtree[("lend", "h100", GPU)] == 10  # initialCohortResources


def test_workload_exceeds_lending_limit_when_borrowing_in_cohort():
    """scheduler_test.go: "workload exceeds lending limit when borrow in cohort"."""
    # lend-a: 3 nominal lending 2; lend-b: 2 nominal lending 2: the cohort pools 2 + 2 = 4, of which
    # `a` holds 2. b asks 3 on lend-b: 2 available, "1 more needed"; a (same queue, same priority) stays
    snap = cluster(
        tree={"lend": None, "lend-a": "lend", "lend-b": "lend"},
        quotas=[quota("lend-a", 3, lending=2), quota("lend-b", 2, lending=2)],
        active=[admitted("a", "lend-b", 2)],
        pending=[incoming("lend-b", 3)],
    )
    d = decide(snapshot=snap, request_id="in")
    assert d.outcome is Outcome.WAIT
    assert d.reason is Reason.WAITING_FOR_QUOTA
    assert "asked 3, 2 available" in d.message
