"""Roll-ups and the pool reconciliation worked to the cent by hand: every roll-up field summed over
several lines of a tenant, idle shares rolled up with their tenants, unassigned usage rolled up
nowhere, and a pool whose price changes mid-period reconciled over both prices."""

from __future__ import annotations

from decimal import Decimal as D

from metering.chargeback.report import (
    PoolCapacity,
    PricedUsage,
    Reconciliation,
    RollupLine,
    compute_chargeback,
)

VISION = "/acme/research/vision/"
NLP = "/acme/research/nlp/"


def usage(tenant: str, path: str, ge_hours: str, card_hours: str, price: str = "2.50") -> PricedUsage:
    return PricedUsage(
        tenant=tenant,
        tenant_path=path,
        pool="east/h100",
        flavor="h100",
        gpu_model="H100-80GB",
        currency="USD",
        unit_price=D(price),
        ge_hours=D(ge_hours),
        card_hours=D(card_hours),
    )


def rollup(path: str, ge_hours: str, card_hours: str, amount: str) -> RollupLine:
    return RollupLine(
        tenant_path=path, currency="USD", ge_hours=D(ge_hours), card_hours=D(card_hours), amount=D(amount)
    )


def test_rollups_sum_ge_hours_card_hours_and_amounts_of_each_line_and_skip_unassigned_usage():
    # Lines, in report order: unassigned ("" sorts first) 1 card-hour = 2.50, rolled up nowhere;
    # nlp ge 2, card 1.6 x 2.50 = 4.00; vision ge 1.5, card 1.2 x 2.50 = 3.00 and ge 0.5, card 0.5 x
    # 3.00 = 1.50. vision: ge 2.0, card 1.7, 4.50; research and acme: ge 4.0, card 3.3, 8.50.
    report = compute_chargeback(
        usage=[
            usage("", "", "1", "1"),
            usage("n", NLP, "2", "1.6"),
            usage("v", VISION, "1.5", "1.2"),
            usage("v", VISION, "0.5", "0.5", price="3.00"),
        ],
        capacity=[],
    )
    assert report.rollups == (
        rollup("/acme/", "4.0", "3.3", "8.50"),
        rollup("/acme/research/", "4.0", "3.3", "8.50"),
        rollup(NLP, "2", "1.6", "4.00"),
        rollup(VISION, "2.0", "1.7", "4.50"),
    )


def test_idle_shares_roll_up_with_their_tenants_charges():
    # a charged 6 card-hours (ge 7.5) = 15.00, b 1 (ge 2) = 2.50; the idle card-hour shared 6/7 and
    # 1/7 to the nanohour: a 0.857142857 -> 2.14, b 0.142857143 -> 0.36 (shares hold no GE-hours).
    # a: ge 7.5, card 6.857142857, 17.14; b: ge 2, card 1.142857143, 2.86; acme: ge 9.5, card 8, 20.00.
    report = compute_chargeback(
        usage=[usage("a", "/acme/a/", "7.5", "6"), usage("b", "/acme/b/", "2", "1")],
        capacity=[
            PoolCapacity(
                pool="east/h100", gpu_model="H100-80GB", currency="USD", unit_price=D("2.50"),
                card_hours=D(8), idle_card_hours=D(1),
            )
        ],
        idle="distributed",
    )  # fmt: skip
    assert report.rollups == (
        rollup("/acme/", "9.5", "8", "20.00"),
        rollup("/acme/a/", "7.5", "6.857142857", "17.14"),
        rollup("/acme/b/", "2", "1.142857143", "2.86"),
    )


def test_a_pool_whose_price_changes_mid_period_is_reconciled_over_both_prices():
    # Before the change: 10 card-hours at 2.00, 9 charged (18.00), 1 idle (2.00). After: 5 at 3.00,
    # 3 charged (9.00), 2 idle (6.00). Physical 10 x 2.00 + 5 x 3.00 = 35.00; lines 18.00 + 9.00 +
    # 2.00 + 6.00 = 35.00; card-hours 15 = 12 charged + 3 idle.
    report = compute_chargeback(
        usage=[usage("v", VISION, "9", "9", price="2.00"), usage("v", VISION, "3", "3", price="3.00")],
        capacity=[
            PoolCapacity(
                pool="east/h100", gpu_model="H100-80GB", currency="USD", unit_price=D(price),
                card_hours=D(cards), idle_card_hours=D(idle),
            )
            for price, cards, idle in (("2.00", "10", "1"), ("3.00", "5", "2"))
        ],
    )  # fmt: skip
    assert report.reconciliations == (
        Reconciliation(
            pool="east/h100",
            currency="USD",
            card_hours=D(15),
            charged_card_hours=D(12),
            idle_card_hours=D(3),
            physical_exact=D("35.00"),
            physical=D("35.00"),
            lines_total=D("35.00"),
            residue=D(0),
        ),
    )
