"""Quota arithmetic where a default takes over: a root with no pool of its own, a quota row of 0 with a
borrowing limit, a lending limit above the quota, a flavor the inventory does not list. The messages
carry the amounts the engine worked out, so each case pins the number, not only the outcome.
Cast: vision (and nlp) under org, whole H100s; the snapshot's clock is 24 hours before the month ends
(builders.NOW)."""

from __future__ import annotations

from quotas.admission import Decision, Outcome, Reason, decide

from .builders import gpus, holding, request, snapshot


def verdict(d: Decision) -> tuple[Outcome, Reason | None, str]:
    return d.outcome, d.reason, d.message


def test_a_tenant_that_lends_nothing_under_a_root_without_a_pool_gets_exactly_its_own_quota():
    # given: vision has 4 GPUs and lends none (lending limit 0), so org's pool is empty: no quota row
    # holds anything at the root; vision already holds all 4
    snap = snapshot(
        tree={"org": None, "vision": "org"},
        quotas=[gpus("vision", 4, lending=0)],
        active=[holding("v0", "vision", 4, order=1)],
        pending=[request("v1", "vision", 1, order=2), request("v2", "vision", 5, order=3)],
    )
    # when / then: one more GPU waits with 0 available (4 kept - 4 used, nothing at the root) ...
    assert verdict(decide(snapshot=snap, request_id="v1")) == (
        Outcome.WAIT,
        Reason.WAITING_FOR_QUOTA,
        "not enough quota for 'vision' in 'h100': nvidia.com/gpu asked 1, 0 available",
    )
    # ... and 5 could never be granted: at most its own 4
    assert verdict(decide(snapshot=snap, request_id="v2")) == (
        Outcome.WAIT,
        Reason.EXCEEDS_MAX_POSSIBLE,
        "exceeds what any quota could hold: nvidia.com/gpu: asked 5, at most 4 could ever be granted",
    )


def test_a_tenant_with_a_zero_quota_may_borrow_up_to_its_borrowing_limit_and_no_more():
    # given: org's own pool is 10 GPUs; vision's quota row is 0 with a borrowing limit of 2, and it
    # already borrows 1
    snap = snapshot(
        tree={"org": None, "vision": "org"},
        quotas=[gpus("org", 10), gpus("vision", 0, borrowing=2)],
        active=[holding("v0", "vision", 1, order=1)],
        pending=[request("v1", "vision", 2, order=2), request("v2", "vision", 3, order=3)],
    )
    # when / then: 2 more would borrow 3 in all: 1 available (0 quota - 1 used + 2 limit) ...
    assert verdict(decide(snapshot=snap, request_id="v1")) == (
        Outcome.WAIT,
        Reason.WAITING_FOR_QUOTA,
        "not enough quota for 'vision' in 'h100': nvidia.com/gpu asked 2, 1 available",
    )
    # ... and 3 could never be granted, with org's 10 free or not: at most 0 + 2
    assert verdict(decide(snapshot=snap, request_id="v2")) == (
        Outcome.WAIT,
        Reason.EXCEEDS_MAX_POSSIBLE,
        "exceeds what any quota could hold: nvidia.com/gpu: asked 3, at most 2 could ever be granted",
    )


def test_a_lending_limit_above_the_quota_lends_the_whole_quota_and_no_more():
    # given: vision has 2 GPUs and a lending limit of 3: it keeps nothing back, but cannot lend the
    # third GPU it does not have; nlp has a quota row of 0
    snap = snapshot(
        tree={"org": None, "vision": "org", "nlp": "org"},
        quotas=[gpus("vision", 2, lending=3), gpus("nlp", 0)],
        pending=[request("n1", "nlp", 3, order=1), request("n2", "nlp", 2, order=2)],
    )
    # when / then: nlp may borrow vision's 2, never 3
    assert verdict(decide(snapshot=snap, request_id="n1")) == (
        Outcome.WAIT,
        Reason.EXCEEDS_MAX_POSSIBLE,
        "exceeds what any quota could hold: nvidia.com/gpu: asked 3, at most 2 could ever be granted",
    )
    assert verdict(decide(snapshot=snap, request_id="n2")) == (
        Outcome.BORROW,
        None,
        "admitted on 'h100' by borrowing 2 nvidia.com/gpu from 'vision'",
    )


def test_a_flavor_missing_from_the_inventory_has_no_card_free():
    # given: quota for 4 GPUs, but the inventory lists no h100 at all
    snap = snapshot(
        tree={"org": None, "vision": "org"},
        quotas=[gpus("vision", 4)],
        free={},
        pending=[request("v1", "vision", 1, order=1)],
    )
    # when / then: the quota allows it; the cards are not there
    assert verdict(decide(snapshot=snap, request_id="v1")) == (
        Outcome.WAIT,
        Reason.NO_PHYSICAL_FIT,
        "quota allows it but 'h100' has too little free capacity: nvidia.com/gpu 0 free of 1 asked",
    )


def test_a_borrowing_limit_counts_only_what_a_tenant_uses_beyond_the_part_it_keeps():
    # given: org's own pool is 10 GPUs; vision has 4, lends at most 1 (so it keeps 3) and may borrow 1;
    # it holds all 4: 3 from what it keeps, 1 from what it lends (so counted at org)
    snap = snapshot(
        tree={"org": None, "vision": "org"},
        quotas=[gpus("org", 10), gpus("vision", 4, borrowing=1, lending=1)],
        active=[holding("v0", "vision", 4, order=1)],
        pending=[request("v1", "vision", 2, order=2)],
    )
    # when / then: from org it may take its lendable 1 plus the limit 1, and uses 1 of that: 1 left
    # (org itself has 11 - 1 = 10 free), nothing left of the 3 it keeps
    assert verdict(decide(snapshot=snap, request_id="v1")) == (
        Outcome.WAIT,
        Reason.WAITING_FOR_QUOTA,
        "not enough quota for 'vision' in 'h100': nvidia.com/gpu asked 2, 1 available",
    )
