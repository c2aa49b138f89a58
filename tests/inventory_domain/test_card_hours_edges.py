"""The card-hour split at its edges, worked by hand (survivors of the mutation run over
inventory/domain/card_hours.py, docs/benchmarks.md): refusals say why, a node with no card charges and
idles nothing, a holder listed twice pays for both, and the scale is the one the split applied."""

from fractions import Fraction

import pytest

from inventory.domain.card_hours import Holding, split_node_hours


def test_negative_cards_hours_or_ge_are_refused_saying_which():
    with pytest.raises(ValueError, match=r"^cards and hours cannot be negative$"):
        split_node_hours(holdings=[], cards=-1, hours=Fraction(1))
    with pytest.raises(ValueError, match=r"^cards and hours cannot be negative$"):
        split_node_hours(holdings=[], cards=1, hours=Fraction(-1))
    with pytest.raises(ValueError, match=r"^a holding's GE cannot be negative$"):
        split_node_hours(holdings=[Holding("a", Fraction(-1, 7))], cards=1, hours=Fraction(1))


def test_a_node_with_no_card_charges_nothing_and_idles_nothing():
    split = split_node_hours(
        holdings=[Holding("a", Fraction(1)), Holding("b", Fraction(1, 2))], cards=0, hours=Fraction(2)
    )
    assert split.card_hours == 0
    assert split.charged == {"a": 0, "b": 0}
    assert split.idle == 0 and isinstance(split.idle, Fraction)
    assert split.scale == 0


def test_a_holder_listed_twice_pays_for_both():
    # one card, one hour: a holds 1/2 and 1/4 of it (two allocations), b 1/7; nothing oversubscribed
    rows = [Holding("a", Fraction(1, 2)), Holding("b", Fraction(1, 7)), Holding("a", Fraction(1, 4))]
    split = split_node_hours(holdings=rows, cards=1, hours=Fraction(1))
    assert split.charged == {"a": Fraction(3, 4), "b": Fraction(1, 7)}
    assert split.idle == 1 - Fraction(3, 4) - Fraction(1, 7) == Fraction(3, 28)
    assert split.scale == 1


def test_the_scale_is_cards_over_the_ge_held_when_oversubscribed():
    # 10 GE on an 8-card node for half an hour: each pays 8/10 of its GE x 1/2 h, nothing idles
    rows = [Holding("a", Fraction(6)), Holding("b", Fraction(4))]
    split = split_node_hours(holdings=rows, cards=8, hours=Fraction(1, 2))
    assert split.scale == Fraction(8, 10)
    assert split.charged == {"a": Fraction(12, 5), "b": Fraction(8, 5)}
    assert split.card_hours == 4 and split.idle == 0 and split.charged_total == 4
