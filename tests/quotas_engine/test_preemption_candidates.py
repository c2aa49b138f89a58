"""Which relatives a request may evict, and when an earlier eviction makes a later one pointless:
Kueue's candidateIsValid on trees deeper than one level and on departments that hold requests
themselves. Cast: whole H100s (1 GE each); every number is worked out in the comments.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import pytest

from quotas.admission import AdmissionPolicy, Outcome, PreemptionPolicy, Reason, Victim, decide

from .builders import GPU, gpus, holding, request, snapshot


def test_a_department_borrowing_for_its_own_request_is_reclaimed_by_its_team():
    # given: org 2 -> dept 0 -> team 1 (lent up to dept). dept's pool is 1, org's 2 + 1 = 3. dept
    # itself holds 2 (1 beyond its pool, borrowed from org); the two cards are all there is
    tree = {"org": None, "dept": "org", "team": "dept"}
    snap = snapshot(
        tree=tree,
        quotas=[gpus("org", 2), gpus("dept", 0), gpus("team", 1)],
        free=0,
        active=[holding("d0", "dept", 2, order=1)],
        pending=[request("t1", "team", 1, order=2)],
    )
    # when: team asks its 1 (org: 3 - 2 = 1 available, but no card is free)
    d = decide(snapshot=snap, request_id="t1")
    # then: team's request fits in its own quota, so dept, beyond its pool, must give the card back
    assert d.outcome is Outcome.PREEMPT
    assert d.victims == (
        Victim(
            request_id="d0", tenant="dept", priority=500, amounts={GPU: 2}, ge=Fraction(2), cause="reclaim"
        ),
    )


def test_once_a_department_is_back_within_its_pool_its_other_teams_keep_their_requests():
    # given: org -> dept-a 1 -> a1 0, a2 0; org -> team-b 3; org -> team-c 0. Pools: dept-a 1, org
    # 1 + 3 = 4. a1 and a2 hold 1 each (dept-a uses 2 of its 1), team-c holds 1: org uses 3. All are
    # low priority; a1 was admitted last, then a2, then team-c's
    tree = {"org": None, "dept-a": "org", "a1": "dept-a", "a2": "dept-a", "team-b": "org", "team-c": "org"}
    quotas = [gpus("dept-a", 1), gpus("a1", 0), gpus("a2", 0), gpus("team-b", 3), gpus("team-c", 0)]
    active = [
        holding("c0", "team-c", 1, order=1, prio="low"),
        holding("a2-0", "a2", 1, order=2, prio="low"),
        holding("a1-0", "a1", 1, order=3, prio="low"),
    ]
    snap = snapshot(tree=tree, quotas=quotas, active=active, pending=[request("b3", "team-b", 3, order=4)])
    # when: team-b asks its 3 (org: 4 - 3 = 1 available)
    d = decide(snapshot=snap, request_id="b3")
    # then: candidates in order a1-0 (latest), a2-0, c0. Evicting a1-0 brings dept-a to 1 of its 1:
    # a2 still holds 1 beyond its 0, but its department is within its pool, so a2-0 stays; c0 goes,
    # and org has 4 - 1 = 3 available
    assert d.outcome is Outcome.PREEMPT
    assert [(v.request_id, v.cause) for v in d.victims] == [("a1-0", "reclaim"), ("c0", "reclaim")]


@pytest.mark.parametrize(
    "v0_created",
    [
        None,  # created before v1: its admission order 1 stands for its creation order
        2,  # created at the same point as v1 (a tie): not newer than v1 either
    ],
)
def test_under_lower_or_newer_equal_priority_a_request_may_not_evict_one_of_its_priority_not_newer(
    v0_created,
):
    # given: vision has 2 GPUs and holds them with v0 (normal); no card is free. Its queue may evict
    # its own lower-priority requests, or equal-priority ones created after the evicting request
    policy = AdmissionPolicy(within_tenant=PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY)
    v0 = dataclasses.replace(holding("v0", "vision", 2, order=1), created_order=v0_created)
    snap = snapshot(
        tree={"org": None, "vision": "org"},
        quotas=[gpus("vision", 2)],
        free=0,
        active=[v0],
        pending=[request("v1", "vision", 1, order=2)],
        policy=policy,
    )
    # when: v1 (normal, created at 2) asks 1
    d = decide(snapshot=snap, request_id="v1")
    # then: v0 is of the same priority and not newer: it stays, and v1 waits for quota (2 - 2 = 0)
    assert (d.outcome, d.reason, d.victims) == (Outcome.WAIT, Reason.WAITING_FOR_QUOTA, ())
