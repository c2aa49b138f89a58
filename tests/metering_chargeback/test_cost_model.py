"""The on-premises cost model, worked by hand."""

from __future__ import annotations

from decimal import Decimal as D
from fractions import Fraction

import pytest

from metering.chargeback.cost_model import CostInputs, derive_price

H100 = CostInputs(
    purchase_price_per_card=D(30000),
    amortisation_months=48,
    watts_under_load=D(700),
    price_per_kwh=D("0.12"),
    pue=D("1.4"),
    hosting_per_card_month=D(150),
)


def test_an_h100_costs_capital_hosting_and_energy_per_card_hour():
    # capital 30,000 / 48 / 730 = 625 / 730 = 0.856164383...; hosting 150 / 730 = 0.205479452...;
    # energy 700 W / 1000 x 0.12 x 1.4 = 0.1176; sum = 775 / 730 + 0.1176 = 1.179243835... -> 1.179244
    derivation = derive_price(H100)
    assert [s.name for s in derivation.steps] == ["capital", "hosting", "energy"]
    assert [s.exact for s in derivation.steps] == [Fraction(625, 730), Fraction(150, 730), Fraction("0.1176")]
    assert derivation.steps[0].shown == D("0.8561643836")
    assert derivation.exact == Fraction(775, 730) + Fraction("0.1176")
    assert derivation.price_per_ge_hour == D("1.179244")


def test_the_price_rounds_once_half_even_from_the_exact_sum():
    # 1 card at 7.30 over 1 month of 730 h: 0.01 an hour exactly; 0.0000005 of energy makes a tie at
    # 0.0100005 -> half-even keeps 0.010000 (the even digit), where rounding each step would not.
    tie = CostInputs(
        purchase_price_per_card=D("7.30"), amortisation_months=1, watts_under_load=D("0.5"),
        price_per_kwh=D("0.001"), pue=D(1), hosting_per_card_month=D(0),
    )  # fmt: skip
    assert derive_price(tie).exact == Fraction(1, 100) + Fraction(5, 10_000_000)
    assert derive_price(tie).price_per_ge_hour == D("0.010000")


def test_inputs_out_of_range_are_refused_naming_them():
    bad = CostInputs(
        purchase_price_per_card=D(-1), amortisation_months=0, watts_under_load=D(300), price_per_kwh=D("0.1"),
        pue=D("0.9"), hosting_per_card_month=D(0),
    )  # fmt: skip
    assert [field for field, _ in bad.problems()] == ["purchase_price_per_card", "amortisation_months", "pue"]
    with pytest.raises(ValueError, match="amortisation_months is at least one month"):
        derive_price(bad)
