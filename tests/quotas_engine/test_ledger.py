"""The working ledger under preemption trials: evicting an allocation and putting it back must leave
the ledger as it was, budgets included. No decision reads a trial's budget commitment after a
put-back today (budgets are checked before victims are sought), so these are checked on the ledger
itself: the next reader of a put-back trial must not see a victim's commitment lost or doubled.
Cast: vision under org, whole H100s; the clock is 24 hours before the month ends (builders.NOW)."""

from __future__ import annotations

from fractions import Fraction

from quotas.admission import BudgetSpec
from quotas.admission.accounting import release, restore
from quotas.admission.quota import Ledger

from .builders import GPU, gpus, holding, snapshot


def budget(tenant: str, flavor: str | None, burned: int) -> BudgetSpec:
    return BudgetSpec(
        tenant=tenant,
        flavor=flavor,
        limit_ge_hours=Fraction(100),
        burned_ge_hours=Fraction(burned),
        hard=True,
    )


def test_a_victim_put_back_in_a_preemption_trial_gets_its_budget_commitment_back_the_others_stay_out():
    # given: org has an all-flavor budget (10 GE-h burned), vision an h100 budget (4 burned); vision's
    # "v0" (3 GPUs) and "v1" (1 GPU) run for their last hour: 3 + 1 GE-h still to burn, committed
    # against both budgets; 4 GPUs are free
    snap = snapshot(
        tree={"org": None, "vision": "org"},
        quotas=[gpus("vision", 8)],
        free=4,
        active=[holding("v0", "vision", 3, order=1), holding("v1", "vision", 1, order=2)],
        budgets=[budget("org", None, 10), budget("vision", "h100", 4)],
    )
    ix = snap.index
    v0, v1 = ix.allocations["v0"], ix.allocations["v1"]
    org, vision = ("org", ""), ("vision", "h100")
    assert (ix.base.committed_of(org), ix.base.committed_of(vision)) == (14, 8)  # 10 + 3 + 1, 4 + 3 + 1
    trial = ix.base.child()
    # when: a trial evicts v0, then v1
    release(ix, trial, v0)
    release(ix, trial, v1)
    # then: their 4 GE-h leave both budgets, their 4 GPUs are free again (4 + 4), both marked evicted
    assert (trial.committed_of(org), trial.committed_of(vision)) == (10, 4)
    assert (trial.free_of(("h100", GPU)), trial.is_removed("v0"), trial.is_removed("v1")) == (8, True, True)
    # when: the trial puts v0 back (it turned out not to be needed)
    restore(ix, trial, v0)
    # then: v0's 3 GE-h, 3 GPUs of usage and 3 cards are back; v1 stays out
    assert (trial.committed_of(org), trial.committed_of(vision)) == (13, 7)
    assert trial.u(("vision", "h100", GPU)) == 3
    assert (trial.free_of(("h100", GPU)), trial.is_removed("v0"), trial.is_removed("v1")) == (5, False, True)


def test_a_ledger_reads_nothing_committed_where_no_layer_has_an_entry():
    base = Ledger()
    trial = base.child()
    assert trial.committed_of(("vision", "")) == Fraction(0)
    base.committed[("vision", "")] = Fraction(7, 2)
    assert trial.committed_of(("vision", "")) == Fraction(7, 2)


def test_evicting_work_kept_within_a_lending_limit_takes_nothing_back_from_the_parent():
    # given: vision has 3 GPUs and lends at most 1 (it keeps 2 for itself); it holds 1, which stays
    # within what it keeps, so none of it is charged to org
    snap = snapshot(
        tree={"org": None, "vision": "org"},
        quotas=[gpus("vision", 3, lending=1)],
        active=[holding("v0", "vision", 1, order=1)],
    )
    ix = snap.index
    assert (ix.base.u(("vision", "h100", GPU)), ix.base.u(("org", "h100", GPU))) == (1, 0)
    trial = ix.base.child()
    # when: a trial evicts it
    release(ix, trial, ix.allocations["v0"])
    # then: vision's usage drops to 0 and org's stays 0 (not -1)
    assert (trial.u(("vision", "h100", GPU)), trial.u(("org", "h100", GPU))) == (0, 0)
