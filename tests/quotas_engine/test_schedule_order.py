"""Which queue head a scheduling pass decides next: a request that does not need to borrow first,
then the lowest weighted share its tenant would have once admitted, re-ranked after every admission.
Cast: vision and speech under org, whole H100s (1 GE each). Every number is worked out in the comments.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

from quotas.admission import Outcome, QueueSpec, QuotaSpec, Reason, schedule

from .builders import ONE_G, THREE_G, gpus, h100_mig_flavor, holding, request, snapshot

TEAMS = {"org": None, "vision": "org", "speech": "org"}


def test_a_request_within_its_quota_goes_before_a_borrower_whatever_the_weights():
    # given: vision has 2 GPUs and a queue of weight 0 (always last among borrowers); speech has 1,
    # holds it, and its queue has weight 1. One card is free. Vision asks 1 (within its 2), speech 1
    # more (1 + 1 > 1: it would borrow)
    snap = snapshot(
        tree=TEAMS,
        quotas=[gpus("vision", 2), gpus("speech", 1)],
        free=1,
        active=[holding("s0", "speech", 1, order=1)],
        pending=[request("s1", "speech", 1, order=2), request("v1", "vision", 1, order=3)],
        weights={"vision": 0, "speech": 1},
    )
    # when
    decisions = schedule(snapshot=snap)
    # then: v1 needs no borrowing, so it goes first, weight 0 or not, and takes the free card; s1's
    # quota would allow it (3 - 2 = 1 left in the org) but no card is left, and no one may be evicted
    assert [(d.request_id, d.outcome) for d in decisions] == [("v1", Outcome.ADMIT), ("s1", Outcome.WAIT)]
    assert decisions[1].reason is Reason.NO_PHYSICAL_FIT


def test_a_tenant_with_a_zero_quota_borrows_its_first_gpu():
    # given: vision has 2 GPUs and a queue of weight 0; speech has a quota row of 0 GPUs (so
    # everything it gets is borrowed) and weight 1. One card is free; each asks 1
    snap = snapshot(
        tree=TEAMS,
        quotas=[gpus("vision", 2), gpus("speech", 0)],
        free=1,
        pending=[request("s1", "speech", 1, order=1), request("v1", "vision", 1, order=2)],
        weights={"vision": 0, "speech": 1},
    )
    # when
    decisions = schedule(snapshot=snap)
    # then: 0 + 1 > 0, s1 would borrow, so v1 (within its 2) goes first and takes the card
    assert [(d.request_id, d.outcome) for d in decisions] == [("v1", Outcome.ADMIT), ("s1", Outcome.WAIT)]


def test_among_equal_shares_the_higher_priority_head_goes_first():
    # given: the org owns a 6-GPU pool; vision and speech own nothing; one card is free. Vision's
    # low-priority request is older than speech's high-priority one; each asks 1
    quotas = (gpus("org", 6), gpus("vision", 0), gpus("speech", 0))
    pending = [
        request("v1", "vision", 1, order=1, prio="low"),
        request("s1", "speech", 1, order=2, prio="high"),
    ]
    snap = snapshot(tree=TEAMS, quotas=quotas, free=1, pending=pending)
    # when
    decisions = schedule(snapshot=snap)
    # then: both would borrow 1 of 6 (share 1/6): priority decides before age; s1 takes the card
    assert [(d.request_id, d.outcome) for d in decisions] == [("s1", Outcome.BORROW), ("v1", Outcome.WAIT)]


def test_a_request_that_fills_its_quota_exactly_does_not_count_as_borrowing():
    # given: as above, but vision asks exactly its 2 GPUs and two cards are free
    snap = snapshot(
        tree=TEAMS,
        quotas=[gpus("vision", 2), gpus("speech", 1)],
        free=2,
        active=[holding("s0", "speech", 1, order=1)],
        pending=[request("s1", "speech", 1, order=2), request("v1", "vision", 2, order=3)],
        weights={"vision": 0, "speech": 1},
    )
    # when
    decisions = schedule(snapshot=snap)
    # then: 0 + 2 <= 2, v1 does not borrow and goes first; then the org's 3 are all used (2 + 1) and
    # s1 waits for quota
    assert [(d.request_id, d.outcome) for d in decisions] == [("v1", Outcome.ADMIT), ("s1", Outcome.WAIT)]
    assert decisions[1].reason is Reason.WAITING_FOR_QUOTA


def test_an_admission_re_ranks_the_other_queues_of_the_same_tenant():
    # given: the org owns a 6-GPU pool; vision and speech own nothing. Vision has two queues
    # ("vision-q", "vision-batch"), speech one; all weight 1. v1 (vision-q, created 1), v2
    # (vision-batch, created 2) and s1 (speech-q, created 3) each ask 1 GPU
    quotas = (gpus("org", 6), gpus("vision", 0), gpus("speech", 0))
    v2 = dataclasses.replace(request("v2", "vision", 1, order=2), queue="vision-batch")
    pending = [request("v1", "vision", 1, order=1), v2, request("s1", "speech", 1, order=3)]
    snap = snapshot(tree=TEAMS, quotas=quotas, pending=[])
    batch = QueueSpec(id="vision-batch", tenant="vision", weight=Fraction(1))
    snap = dataclasses.replace(snap, queues=(*snap.queues, batch), pending=tuple(pending))
    # when
    decisions = schedule(snapshot=snap)
    # then: at first every head would borrow 1 of 6 (share 1/6): the oldest, v1, goes. Vision then
    # borrows 1, so v2 would bring it to 2/6 = 1/3, while s1 stays at 1/6: s1 before v2
    assert [d.request_id for d in decisions] == ["v1", "s1", "v2"]
    assert all(d.outcome is Outcome.BORROW for d in decisions)


def test_a_resource_of_its_flavor_a_request_does_not_ask_for_adds_nothing_to_its_share():
    # given: an H100 in MIG mode with 1g.10gb (1/7 GE) and 3g.40gb (1/2 GE) slices. Vision has 7 1g
    # slices and a 3g row of 0; speech 7 1g slices. Vision's request (older) and speech's each ask 1 1g
    one_g, three_g = ONE_G, THREE_G
    mig = h100_mig_flavor()
    quotas = [
        QuotaSpec(tenant="vision", flavor="mig", resource=one_g, nominal=7),
        QuotaSpec(tenant="vision", flavor="mig", resource=three_g, nominal=0),
        QuotaSpec(tenant="speech", flavor="mig", resource=one_g, nominal=7),
    ]
    pending = [
        request("v1", "vision", 1, order=1, flavor="mig", resource=one_g),
        request("s1", "speech", 1, order=2, flavor="mig", resource=one_g),
    ]
    snap = snapshot(
        tree=TEAMS, quotas=quotas, free={"mig": {one_g: 14, three_g: 2}}, pending=pending, flavors=(mig,)
    )
    # when
    decisions = schedule(snapshot=snap)
    # then: neither borrows (1 <= 7), and vision's 3g row stays at 0 used of 0 since v1 asks no 3g:
    # both shares are 0, so the older v1 goes first
    assert [(d.request_id, d.outcome) for d in decisions] == [("v1", Outcome.ADMIT), ("s1", Outcome.ADMIT)]
