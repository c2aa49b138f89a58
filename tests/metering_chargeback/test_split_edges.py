"""Edges of the in-hour split, worked by hand: holders of no time or no GE, unplaced holders with no
card left to them, and a stale inventory whose node has fewer cards than the data plane places on it."""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from metering.chargeback.split import HourSplit, NodeHolding, split_node_hour

HOUR = 3600


def test_a_holding_that_starts_and_ends_at_the_same_second_is_accepted_and_charged_nothing():
    # A pod bound and gone within the same second: no time held, so 0 card-hours; "a" holds the card
    # all hour alone (the blip is never live beside it), 1 card-hour, nothing idle.
    split = split_node_hour(
        holdings=[NodeHolding("a", F(1), 0, HOUR), NodeHolding("blip", F(1), 1800, 1800)], cards=1
    )
    assert split == HourSplit(card_hours=F(1), charged={"a": F(1), "blip": F(0)}, idle=F(0))


def test_a_holding_of_zero_ge_is_accepted_and_charged_nothing():
    # 0 GE for the whole hour pays 0 / max(1, 0 + 1/2) of the card; the 1/2 GE share pays 1/2.
    split = split_node_hour(
        holdings=[NodeHolding("empty", F(0), 0, HOUR), NodeHolding("half", F(1, 2), 0, HOUR)], cards=1
    )
    assert split == HourSplit(card_hours=F(1), charged={"empty": F(0), "half": F(1, 2)}, idle=F(1, 2))


def test_a_negative_ge_is_refused_naming_the_holder():
    with pytest.raises(ValueError, match=r"^holding minus has negative GE$"):
        split_node_hour(holdings=[NodeHolding("minus", F(-1, 4), 0, HOUR)], cards=1)


def test_unplaced_holders_get_nothing_when_known_holders_sit_on_every_card():
    # One card, a HAMi share sits on it: the device-plugin pod whose card is unknown has no other card
    # to share, so it pays 0 and the card's unheld half is idle (1 - 1/2).
    split = split_node_hour(
        holdings=[NodeHolding("hami", F(1, 2), 0, HOUR, card="x"), NodeHolding("pod", F(1), 0, HOUR)],
        cards=1,
    )
    assert split == HourSplit(card_hours=F(1), charged={"hami": F(1, 2), "pod": F(0)}, idle=F(1, 2))


def test_known_cards_beyond_the_nodes_count_are_charged_and_the_offer_grows_to_match():
    # The inventory says 1 card; the data plane places a on gpu0 all hour (1) and b on gpu1 for the
    # first half (1/2). Charged 3/2 > offered 1: the offer becomes what was used, 3/2, and idle is 0.
    split = split_node_hour(
        holdings=[
            NodeHolding("a", F(1), 0, HOUR, card="gpu0"),
            NodeHolding("b", F(1), 0, 1800, card="gpu1"),
        ],
        cards=1,
    )
    assert split == HourSplit(card_hours=F(3, 2), charged={"a": F(1), "b": F(1, 2)}, idle=F(0))
    assert split.idle == 0 and isinstance(split.idle, F)
