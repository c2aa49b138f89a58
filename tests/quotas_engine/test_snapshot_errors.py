"""Bad input to the engine: a snapshot that refers to something it does not hold, or holds impossible
values, is refused when it is built, with a message saying what is wrong (and nothing is decided).
Each case starts from a valid snapshot (org -> vision with 4 H100s, vision's queue `vision-q`) and
breaks one thing."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from datetime import datetime
from fractions import Fraction
from typing import Any

import pytest

from quotas.admission import (
    AdmissionPolicy,
    BudgetSpec,
    FlavorResource,
    FlavorSpec,
    PreemptionPolicy,
    PriorityClassSpec,
    QueueSpec,
    Snapshot,
    SnapshotError,
    TenantNode,
)
from quotas.admission.quota import TreeError

from .builders import GPU, H100, gpus, holding, request, snapshot

MIG_1G = "nvidia.com/mig-1g.10gb"
MIG = FlavorSpec(name="mig", resources=(FlavorResource(name=MIG_1G, ge_per_unit=Fraction(1, 7)),))
VISION_Q = QueueSpec(id="vision-q", tenant="vision")
KEY = ("vision", "h100", GPU)


def valid() -> Snapshot:
    return snapshot(tree={"org": None, "vision": "org"}, quotas=[gpus("vision", 4)], flavors=(H100, MIG))


def with_(**changes: Any) -> Callable[[], Snapshot]:
    return lambda: dataclasses.replace(valid(), **changes)


def budget(tenant: str = "vision", flavor: str | None = None) -> BudgetSpec:
    return BudgetSpec(
        tenant=tenant, flavor=flavor, limit_ge_hours=Fraction(10), burned_ge_hours=Fraction(0), hard=True
    )


def amounts(rid: str, values: dict[str, int], **changes: Any):
    return dataclasses.replace(holding(rid, "vision", 1, order=1), amounts=values, **changes)


def asking(rid: str = "v1", **changes: Any):
    return dataclasses.replace(request(rid, "vision", 1, order=1), **changes)


TENANTS = (TenantNode(id="org"), TenantNode(id="vision", parent="org"))
ANY_WITHIN = AdmissionPolicy(within_tenant=PreemptionPolicy.ANY)
RULE = "within_tenant preemption is Never, LowerPriority or LowerOrNewerEqualPriority"

CASES = [
    # the clock
    ("naive now", with_(now=datetime(2025, 3, 31)), "now and month_end must be timezone-aware"),
    ("naive month end", with_(month_end=datetime(2025, 4, 1)), "now and month_end must be timezone-aware"),
    # policies: Kueue's withinClusterQueue has no "Any"
    ("fleet policy Any", with_(policy=ANY_WITHIN), f"the fleet: {RULE}"),
    (
        "queue policy Any",
        with_(queues=(dataclasses.replace(VISION_Q, preemption=ANY_WITHIN),)),
        f"queue 'vision-q': {RULE}",
    ),
    # names given twice
    ("flavor twice", with_(flavors=(H100, MIG, H100)), "duplicate flavor names"),
    ("tenant twice", with_(tenants=(*TENANTS, TenantNode(id="vision"))), "duplicate tenant names"),
    (
        "class twice",
        with_(
            priority_classes=(PriorityClassSpec(name="low", value=1), PriorityClassSpec(name="low", value=2))
        ),
        "duplicate class names",
    ),
    ("queue twice", with_(queues=(VISION_Q, VISION_Q)), "duplicate queue names"),
    # the tenant tree and its quotas
    (
        "unknown parent",
        with_(tenants=(TenantNode(id="org"), TenantNode(id="vision", parent="nowhere"))),
        "tenant 'vision' has unknown parent 'nowhere'",
    ),
    (
        "cycle",
        with_(tenants=(*TENANTS, TenantNode(id="a", parent="b"), TenantNode(id="b", parent="a"))),
        "tenant tree has a cycle through 'a'",
    ),
    ("quota of unknown tenant", with_(quotas=(gpus("nobody", 1),)), "quota for unknown tenant 'nobody'"),
    ("quota twice", with_(quotas=(gpus("vision", 4), gpus("vision", 2))), f"duplicate quota {KEY}"),
    ("negative nominal", with_(quotas=(gpus("vision", -1),)), f"negative quota {KEY}"),
    ("negative borrowing limit", with_(quotas=(gpus("vision", 4, borrowing=-1),)), f"negative quota {KEY}"),
    ("negative lending limit", with_(quotas=(gpus("vision", 4, lending=-1),)), f"negative quota {KEY}"),
    (
        "quota on a resource the flavor lacks",
        with_(quotas=(dataclasses.replace(gpus("vision", 4), flavor="mig"),)),
        "quota for unknown flavor resource mig/nvidia.com/gpu",
    ),
    # queues and budgets
    (
        "queue of unknown tenant",
        with_(queues=(VISION_Q, QueueSpec(id="x-q", tenant="nobody"))),
        "unknown tenant 'nobody'",
    ),
    (
        "negative weight",
        with_(queues=(dataclasses.replace(VISION_Q, weight=Fraction(-1)),)),
        "queue 'vision-q' has a negative weight",
    ),
    ("budget of unknown tenant", with_(budgets=(budget("nobody"),)), "unknown tenant 'nobody'"),
    ("all-flavor budget twice", with_(budgets=(budget(), budget())), "duplicate budget ('vision', '')"),
    (
        "flavor budget twice",
        with_(budgets=(budget(flavor="h100"), budget(flavor="h100"))),
        "duplicate budget ('vision', 'h100')",
    ),
    # allocations
    (
        "allocation twice",
        with_(active=(holding("v0", "vision", 1, order=1), holding("v0", "vision", 2, order=2))),
        "duplicate allocation 'v0'",
    ),
    (
        "allocation of unknown tenant",
        with_(active=(holding("v0", "nobody", 1, order=1),)),
        "unknown tenant 'nobody'",
    ),
    (
        "allocation of unknown class",
        with_(active=(holding("v0", "vision", 1, order=1, prio="urgent"),)),
        "unknown priority class 'urgent'",
    ),
    (
        "allocation on unknown flavor",
        with_(active=(holding("v0", "vision", 1, order=1, flavor="a100"),)),
        "unknown flavor 'a100'",
    ),
    (
        "allocation of a resource the flavor lacks",
        with_(active=(amounts("v0", {MIG_1G: 1}),)),
        "flavor 'h100' has no resource 'nvidia.com/mig-1g.10gb'",
    ),
    ("negative allocation", with_(active=(amounts("v0", {GPU: -1}),)), "negative amount of 'nvidia.com/gpu'"),
    ("allocation of nothing", with_(active=(amounts("v0", {GPU: 0}),)), "empty amounts for flavor 'h100'"),
    # pending requests
    ("request twice", with_(pending=(asking(), asking())), "duplicate request 'v1'"),
    (
        "request with an allocation's id",
        with_(active=(holding("v1", "vision", 1, order=1),), pending=(asking(),)),
        "duplicate request 'v1'",
    ),
    ("request of unknown tenant", with_(pending=(asking(tenant="nobody"),)), "unknown tenant 'nobody'"),
    ("request in unknown queue", with_(pending=(asking(queue="nowhere-q"),)), "unknown queue 'nowhere-q'"),
    (
        "request in another tenant's queue",
        with_(pending=(asking(queue="org-q"),)),
        "request 'v1' is in queue 'org-q' of another tenant",
    ),
    (
        "request of unknown class",
        with_(pending=(asking(priority_class="urgent"),)),
        "unknown priority class 'urgent'",
    ),
    (
        "request naming a flavor twice",
        with_(pending=(asking(fallback_flavors=("mig", "h100")),)),
        "request 'v1' names a flavor twice",
    ),
    (
        "fallback flavor lacking the resource",
        with_(pending=(asking(fallback_flavors=("mig",)),)),
        "flavor 'mig' has no resource 'nvidia.com/gpu'",
    ),
    ("request of nothing", with_(pending=(asking(amounts={GPU: 0}),)), "empty amounts for flavor 'h100'"),
]


# Checked by the quota tree (TreeError); the others by the snapshot's index (SnapshotError, a TreeError).
TREE_CASES = {
    "unknown parent",
    "cycle",
    "quota of unknown tenant",
    "quota twice",
    "negative nominal",
    "negative borrowing limit",
    "negative lending limit",
}


@pytest.mark.parametrize(("case", "build", "message"), CASES, ids=[c[0] for c in CASES])
def test_a_snapshot_with_bad_input_is_refused_saying_what_is_wrong(case, build, message):
    valid()  # the starting point itself is fine
    with pytest.raises(TreeError if case in TREE_CASES else SnapshotError) as e:
        build()
    assert re.fullmatch(re.escape(message), str(e.value))


def test_zero_weights_quotas_limits_and_amounts_are_accepted():
    # the boundaries of the checks above: zero is a valid weight, quota, limit and (alongside another
    # resource) amount
    snap = dataclasses.replace(
        valid(),
        quotas=(gpus("vision", 0, borrowing=0, lending=0),),
        queues=(dataclasses.replace(VISION_Q, weight=Fraction(0)),),
        active=(holding("v0", "vision", 1, order=1),),
    )
    assert snap.index.queues["vision-q"].weight == 0
