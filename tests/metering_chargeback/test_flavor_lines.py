"""A tenant's usage of one pool at one price is one charge, rounded once, however many flavors cut it
into lines: the lines are dealt its cents by largest remainder, so a pool's lines sum to its cost
with no residue (issue 32, item 4: infra's MIG charge came to 17.18 against 17.17)."""

from __future__ import annotations

from decimal import Decimal as D

from metering.chargeback.money import allocate_rounded
from metering.chargeback.report import PoolCapacity, PricedUsage, compute_chargeback

INFRA = "/infra/"


def mig(flavor: str, card_hours: str, kind: str = "charge", adjusts: str = "") -> PricedUsage:
    return PricedUsage(
        tenant="i",
        tenant_path=INFRA,
        pool="east/h100-mig",
        flavor=flavor,
        gpu_model="H100-80GB",
        currency="USD",
        unit_price=D("2.00"),
        ge_hours=D(card_hours),
        card_hours=D(card_hours),
        kind=kind,
        adjusts=adjusts,
        rate_card="rc-mig",
    )


def test_two_flavor_lines_of_one_tenant_sum_to_its_charge_rounded_once_and_the_pool_has_no_residue():
    # infra on the MIG pool at 2.00 per GE-hour:
    #   1g.10gb 1.573 card-hours   x 2.00 =  3.146  (alone:  3.15)
    #   3g.40gb 7.01325 card-hours x 2.00 = 14.0265 (alone: 14.03)
    #   the charge: 3.146 + 14.0265 = 17.1725 -> 17.17 (rounded one by one: 3.15 + 14.03 = 17.18).
    # Cents: floors 3.14 + 14.02 = 17.16, one cent left, to the larger remainder (0.65 of a cent
    # against 0.6): 3g.40gb. Lines 3.14 + 14.03 = 17.17.
    # Pool: 10 card-hours x 2.00 = 20.00; idle 10 - 8.58625 = 1.41375 x 2.00 = 2.8275 -> 2.83;
    # 17.17 + 2.83 = 20.00: no residue (the old code showed -0.01).
    report = compute_chargeback(
        usage=[mig("1g.10gb", "1.573"), mig("3g.40gb", "7.01325")],
        capacity=[
            PoolCapacity(
                pool="east/h100-mig",
                gpu_model="H100-80GB",
                currency="USD",
                unit_price=D("2.00"),
                card_hours=D(10),
                idle_card_hours=D("1.41375"),
                rate_card="rc-mig",
            )
        ],
    )
    assert [(line.kind, line.flavor, line.amount_exact, line.amount) for line in report.lines] == [
        ("charge", "1g.10gb", D("3.146"), D("3.14")),
        ("charge", "3g.40gb", D("14.0265"), D("14.03")),
        ("idle", "", D("2.82750"), D("2.83")),
    ]
    (rec,) = report.reconciliations
    assert (rec.physical, rec.lines_total, rec.residue) == (D("20.00"), D("20.00"), D(0))
    (rollup,) = report.rollups
    assert rollup.amount == D("17.17")


def test_flavor_lines_of_a_late_correction_are_one_correction_rounded_once():
    # A credit of two flavor lines of -4.293 card-hours each at 2.00: -8.586 each (alone: -8.59 each,
    # -17.18); the credit is -17.172 -> -17.17. Floors -8.59 + -8.59 = -17.18, one cent back, to the
    # earlier of two equal remainders (0.4 of a cent each): -8.58 + -8.59 = -17.17.
    report = compute_chargeback(
        usage=[
            mig("1g.10gb", "-4.293", kind="adjustment", adjusts="2026-10"),
            mig("2g.20gb", "-4.293", kind="adjustment", adjusts="2026-10"),
        ],
        capacity=[],
    )
    assert [(line.flavor, line.amount) for line in report.lines] == [
        ("1g.10gb", D("-8.58")),
        ("2g.20gb", D("-8.59")),
    ]


def test_cents_are_dealt_by_largest_remainder_and_sum_to_the_total_rounded_half_even():
    # 0.125 + 0.125 = 0.25 exactly: each alone 0.12 (half to even), together 0.25, so one line takes
    # the cent: the first of equal remainders.
    assert allocate_rounded([D("0.125"), D("0.125")], "USD") == [D("0.13"), D("0.12")]
    # 1.005 + 2.005 + 3.005 = 6.015 -> 6.02 (half to even); floors 1.00 + 2.00 + 3.00 = 6.00, so two
    # cents are left, to the first two of three equal remainders.
    assert allocate_rounded([D("1.005"), D("2.005"), D("3.005")], "USD") == [D("1.01"), D("2.01"), D("3.00")]
    # Yen has no minor unit: 100.4 + 100.4 = 200.8 -> 201; floors 200, one yen to the first.
    assert allocate_rounded([D("100.4"), D("100.4")], "JPY") == [D("101"), D("100")]
    assert allocate_rounded([], "USD") == []
