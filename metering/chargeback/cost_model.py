"""The on-premises cost model: what a GE-hour of a GPU model costs from what its cards cost.

Pure (no Django). Per card and hour, with a month of ``hours_per_month`` hours (730 = 8,760 / 12 by
default):

    capital  = purchase price per card / amortisation months / hours per month
    hosting  = hosting per card-month / hours per month
    energy   = watts under load / 1000 x price per kWh x PUE
    price per GE-hour = capital + hosting + energy, rounded once, half-even, to the rate card's six
    places (a GE is a card's worth, DESIGN §3, so a card-hour's cost is a GE-hour's price).

Energy is priced at full load on purpose: the price recovers the card's cost when it is held, and
idle capacity is reported (and can be distributed) by the chargeback, not hidden in the price.
Each step is kept with its exact value, so the page and the API show how the price was reached.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction

__all__ = ["PRICE_PLACES", "CostInputs", "Derivation", "Step", "derive_price"]

PRICE_PLACES = 6  # metering.RateCard.price_per_ge_hour
HOURS_PER_MONTH = Decimal(730)


@dataclass(frozen=True, slots=True)
class CostInputs:
    purchase_price_per_card: Decimal
    amortisation_months: int
    watts_under_load: Decimal
    price_per_kwh: Decimal
    pue: Decimal  # power usage effectiveness of the room: 1.0 is no overhead
    hosting_per_card_month: Decimal  # rack space, network, support contracts, per card
    hours_per_month: Decimal = HOURS_PER_MONTH

    def problems(self) -> list[tuple[str, str]]:
        """(field, message) for each input out of range; empty when all are usable."""
        found = []
        for name in (
            "purchase_price_per_card",
            "watts_under_load",
            "price_per_kwh",
            "hosting_per_card_month",
        ):
            if getattr(self, name) < 0:
                found.append((name, "cannot be negative"))
        if self.amortisation_months < 1:
            found.append(("amortisation_months", "is at least one month"))
        if self.pue < 1:
            found.append(("pue", "is at least 1.0 (all power reaches the cards, none for cooling)"))
        if self.hours_per_month <= 0:
            found.append(("hours_per_month", "must be positive"))
        return found


@dataclass(frozen=True, slots=True)
class Step:
    name: str
    formula: str
    exact: Fraction  # per card-hour, unrounded

    @property
    def shown(self) -> Decimal:
        """To ten places, for reading: the price is rounded from the exact sum, not from these."""
        return _decimal(self.exact, 10)


@dataclass(frozen=True, slots=True)
class Derivation:
    steps: tuple[Step, ...]
    exact: Fraction
    price_per_ge_hour: Decimal


def _decimal(value: Fraction, places: int) -> Decimal:
    return (
        (Decimal(value.numerator) / Decimal(value.denominator)).quantize(
            Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN
        )
        if value.denominator != 1
        else Decimal(value.numerator).quantize(Decimal(1).scaleb(-places))
    )


def derive_price(inputs: CostInputs) -> Derivation:
    """The GE-hour price of ``inputs`` with its steps. Raises ValueError on inputs out of range."""
    problems = inputs.problems()
    if problems:
        raise ValueError("; ".join(f"{field} {message}" for field, message in problems))
    hours = Fraction(inputs.hours_per_month)
    capital = Fraction(inputs.purchase_price_per_card) / inputs.amortisation_months / hours
    hosting = Fraction(inputs.hosting_per_card_month) / hours
    energy = Fraction(inputs.watts_under_load) / 1000 * Fraction(inputs.price_per_kwh) * Fraction(inputs.pue)
    steps = (
        Step(
            "capital",
            f"{inputs.purchase_price_per_card} / {inputs.amortisation_months} months"
            f" / {inputs.hours_per_month} h",
            capital,
        ),
        Step("hosting", f"{inputs.hosting_per_card_month} / {inputs.hours_per_month} h", hosting),
        Step(
            "energy",
            f"{inputs.watts_under_load} W / 1000 x {inputs.price_per_kwh} per kWh x PUE {inputs.pue}",
            energy,
        ),
    )
    exact = capital + hosting + energy
    # Decimal division at 28 digits would round before the final rounding; Fractions do not.
    return Derivation(steps=steps, exact=exact, price_per_ge_hour=_decimal(exact, PRICE_PLACES))
