"""Who a borrowing request is said to borrow from, and what a request short of quota is told.
Quota in a tree is pooled, so crediting lenders is a convention (docs/admission.md): at each level,
the siblings with the most unused lendable quota first (then by name), then the level's own shared
pool. Cast: whole H100s (1 GE each); every number is worked out in the comments.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from quotas.admission import FlavorResource, FlavorSpec, Loan, Outcome, QuotaSpec, Reason, decide

from .builders import GPU, H100, gpus, holding, request, snapshot

# org (1 GPU of its own, shared) -> vision 2; speech 2 (lends all); audio 3 lending at most 1 (keeps 2);
# lab 0 (a quota row, nothing to lend). org's subtree quota: 1 + 2 + 2 + 1 + 0 = 6
TEAMS = {"org": None, "vision": "org", "speech": "org", "audio": "org", "lab": "org"}
QUOTAS = [gpus("org", 1), gpus("vision", 2), gpus("speech", 2), gpus("audio", 3, lending=1), gpus("lab", 0)]


@pytest.mark.parametrize(
    ("asked", "loans", "message"),
    [
        # 4 - 2 = 2 borrowed: speech has 2 unused and lendable, audio 1: speech covers both
        (4, [("speech", 2)], "admitted on 'h100' by borrowing 2 nvidia.com/gpu from 'speech'"),
        # 6 - 2 = 4 borrowed: speech 2, then audio 1, then the org's own shared GPU
        (
            6,
            [("audio", 1), ("org", 1), ("speech", 2)],
            "admitted on 'h100' by borrowing 1 nvidia.com/gpu from 'audio', 1 nvidia.com/gpu from 'org', "
            "2 nvidia.com/gpu from 'speech'",
        ),
    ],
)
def test_a_borrower_is_credited_to_the_siblings_with_most_unused_quota_then_the_shared_pool(
    asked, loans, message
):
    snap = snapshot(tree=TEAMS, quotas=QUOTAS, pending=[request("v1", "vision", asked, order=1)])
    d = decide(snapshot=snap, request_id="v1")
    assert d.outcome is Outcome.BORROW
    assert [(loan.lender, loan.amount, loan.ge) for loan in d.borrowed] == [(s, a, a) for s, a in loans]
    assert d.message == message
    assert (d.queue, d.amounts) == ("vision-q", {GPU: asked})


def test_what_a_lender_uses_itself_is_not_lent():
    # given: as above, but speech uses 1 of its 2 and audio 2 of its 3 (its kept 2: lends 1 still)
    active = [holding("s0", "speech", 1, order=1), holding("a0", "audio", 2, order=2)]
    snap = snapshot(tree=TEAMS, quotas=QUOTAS, active=active, pending=[request("v1", "vision", 4, order=3)])
    # when: vision asks 4, borrowing 2
    d = decide(snapshot=snap, request_id="v1")
    # then: speech has 2 - 1 = 1 unused, audio 3 - 2 (kept) - 0 = 1 (its usage stays within what it
    # keeps): a tie, broken by name: audio 1, speech 1
    assert [(loan.lender, loan.amount) for loan in d.borrowed] == [("audio", 1), ("speech", 1)]


def test_a_request_short_of_quota_is_told_its_shortfall():
    # given: speech and audio use all they lend and keep (2 + 3); vision holds 1 of its 2
    active = [
        holding("s0", "speech", 2, order=1),
        holding("a0", "audio", 3, order=2),
        holding("v0", "vision", 1, order=3),
    ]
    pending = [request("v1", "vision", 3, order=4)]
    snap = snapshot(tree=TEAMS, quotas=QUOTAS, active=active, pending=pending)
    # when: vision asks 3 at its own priority (no one it may evict)
    d = decide(snapshot=snap, request_id="v1")
    # then: the org's 6 less 2 + 1 (audio's 3 beyond its kept 2) + 1 = 2 available
    assert (d.outcome, d.reason) == (Outcome.WAIT, Reason.WAITING_FOR_QUOTA)
    assert d.message == "not enough quota for 'vision' in 'h100': nvidia.com/gpu asked 3, 2 available"


def test_a_tenant_over_a_cut_quota_is_told_none_is_available_not_a_negative_figure():
    # given: vision's quota was cut to 2 while it holds 3 (no lender)
    snap = snapshot(
        tree={"org": None, "vision": "org"},
        quotas=[gpus("vision", 2)],
        active=[holding("v0", "vision", 3, order=1)],
        pending=[request("v1", "vision", 1, order=2)],
    )
    # when: it asks 1 more
    d = decide(snapshot=snap, request_id="v1")
    # then: 2 - 3 = -1 available, said as 0
    assert d.message == "not enough quota for 'vision' in 'h100': nvidia.com/gpu asked 1, 0 available"


def test_a_borrower_already_using_part_of_its_quota_borrows_only_what_exceeds_it():
    # given: vision already holds 1 of its 2; nobody else uses anything
    active = [holding("v0", "vision", 1, order=1)]
    snap = snapshot(tree=TEAMS, quotas=QUOTAS, active=active, pending=[request("v1", "vision", 3, order=2)])
    # when: it asks 3 more
    d = decide(snapshot=snap, request_id="v1")
    # then: 1 + 3 = 4, 2 beyond its 2: both from speech (2 unused, more than audio's 1)
    assert d.outcome is Outcome.BORROW
    assert [(loan.lender, loan.amount) for loan in d.borrowed] == [("speech", 2)]


def test_a_borrower_already_beyond_its_quota_is_credited_only_for_the_new_excess():
    # given: vision holds 3, one beyond its 2 (borrowed); nobody else uses anything
    active = [holding("v0", "vision", 3, order=1)]
    snap = snapshot(tree=TEAMS, quotas=QUOTAS, active=active, pending=[request("v1", "vision", 1, order=2)])
    # when: it asks 1 more
    d = decide(snapshot=snap, request_id="v1")
    # then: (3 + 1 - 2) - (3 - 2) = 1 newly borrowed, from speech (2 unused, the most)
    assert [(loan.lender, loan.amount) for loan in d.borrowed] == [("speech", 1)]


def test_a_borrower_deep_in_the_tree_is_credited_where_the_quota_is_free():
    # given: org -> dept (no quota of its own, may borrow 2) -> team-a 2, team-b 0; org -> dept2 4.
    # team-b holds 1 (borrowed within dept: dept uses 1 of its 2)
    tree = {"org": None, "dept": "org", "team-a": "dept", "team-b": "dept", "dept2": "org"}
    quotas = [gpus("dept", 0, borrowing=2), gpus("team-a", 2), gpus("team-b", 0), gpus("dept2", 4)]
    active = [holding("b0", "team-b", 1, order=1)]
    snap = snapshot(tree=tree, quotas=quotas, active=active, pending=[request("a3", "team-a", 3, order=2)])
    # when: team-a asks 3, one beyond its 2
    d = decide(snapshot=snap, request_id="a3")
    # then: within dept nothing is free for it (2 - 1 used - team-a's own 2 unused < 0); at org, 6 - 1
    # used - dept's 1 unused = 4 free, taken from dept2's 4 idle
    assert d.outcome is Outcome.BORROW
    assert [(loan.lender, loan.amount) for loan in d.borrowed] == [("dept2", 1)]


def test_a_loan_of_mig_slices_is_counted_in_ge():
    # given: vision and speech have 2 slices of 3g.40gb each (1/2 GE a slice); speech uses none
    mig = "nvidia.com/mig-3g.40gb"
    flavor = FlavorSpec(name="h100-mig", resources=(FlavorResource(name=mig, ge_per_unit=Fraction(1, 2)),))
    quotas = [QuotaSpec(tenant=t, flavor="h100-mig", resource=mig, nominal=2) for t in ("vision", "speech")]
    snap = snapshot(
        tree={"org": None, "vision": "org", "speech": "org"},
        quotas=quotas,
        free={"h100-mig": {mig: 8}},
        pending=[request("m1", "vision", 3, order=1, flavor="h100-mig", resource=mig)],
        flavors=(H100, flavor),
    )
    # when: vision asks 3 slices
    d = decide(snapshot=snap, request_id="m1")
    # then: 1 slice borrowed from speech, 1 x 1/2 = 1/2 GE
    assert [(loan.lender, loan.amount, loan.ge) for loan in d.borrowed] == [("speech", 1, Fraction(1, 2))]
    assert d.borrowed_ge == Fraction(1, 2)


def test_a_department_without_any_quota_passes_a_borrower_on_to_the_org_pool():
    # given: org 2 -> dept (no quota row at all) -> team-a 1 that lends nothing (lending limit 0), so
    # dept has no quota in h100 whatsoever; org's pool is its own 2
    tree = {"org": None, "dept": "org", "team-a": "dept"}
    quotas = [gpus("org", 2), gpus("team-a", 1, lending=0)]
    snap = snapshot(tree=tree, quotas=quotas, pending=[request("a2", "team-a", 2, order=1)])
    # when: team-a asks 2, one beyond its 1
    d = decide(snapshot=snap, request_id="a2")
    # then: dept has 0 - 0 used - 0 lendable = nothing free; org 2 - 0 - 0 = 2: the 1 is the org's
    assert d.borrowed == (Loan(lender="org", resource=GPU, amount=1, ge=Fraction(1)),)
    assert d.message == "admitted on 'h100' by borrowing 1 nvidia.com/gpu from 'org'"


def test_a_department_whose_pool_its_children_use_up_passes_a_borrower_on_to_the_org():
    # given: org 2 -> dept (no quota of its own) -> team-a 1, team-b 1, both lending all: dept's pool
    # is 2, org's 2 + 2 = 4. team-b holds 2 (1 borrowed within dept): dept uses 2, and so does org
    tree = {"org": None, "dept": "org", "team-a": "dept", "team-b": "dept"}
    quotas = [gpus("org", 2), gpus("team-a", 1), gpus("team-b", 1)]
    active = [holding("b0", "team-b", 2, order=1)]
    snap = snapshot(tree=tree, quotas=quotas, active=active, pending=[request("a2", "team-a", 2, order=2)])
    # when: team-a asks 2 (org has 4 - 2 = 2 left), one beyond its 1
    d = decide(snapshot=snap, request_id="a2")
    # then: within dept, 2 - 2 used - team-a's own 1 unused = -1: nothing free there; at org,
    # 4 - 2 used - dept's 0 unused lendable = 2 free, and dept has no sibling: the org's own pool
    assert d.borrowed == (Loan(lender="org", resource=GPU, amount=1, ge=Fraction(1)),)
