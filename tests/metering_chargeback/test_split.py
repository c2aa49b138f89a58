"""The in-hour card-hour split, worked by hand for each sharing mechanism (DESIGN §3)."""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from metering.chargeback.split import NodeHolding, split_node_hour

HOUR = 3600


def test_whole_gpus_on_a_two_card_node_leave_the_unheld_half_card_idle():
    # a holds 1 GPU all hour, b holds 1 GPU for the first 30 minutes: 1 + 0.5 charged of 2 cards
    split = split_node_hour(
        holdings=[NodeHolding("a", F(1), 0, HOUR), NodeHolding("b", F(1), 0, 1800)], cards=2
    )
    assert split.charged == {"a": F(1), "b": F(1, 2)}
    assert split.idle == F(1, 2)
    assert split.card_hours == 2


def test_mig_4g_and_3g_on_one_h100_are_scaled_down_to_exactly_the_card():
    # 4g.40gb = 4/7 and 3g.40gb = 1/2 sum to 15/14: each scaled by 14/15 -> 8/15 and 7/15, no idle
    split = split_node_hour(
        holdings=[
            NodeHolding("4g", F(4, 7), 0, HOUR, card="gpu0"),
            NodeHolding("3g", F(1, 2), 0, HOUR, card="gpu0"),
        ],
        cards=1,
    )
    assert split.charged == {"4g": F(8, 15), "3g": F(7, 15)}
    assert split.idle == 0


def test_three_time_sliced_replicas_of_four_leave_a_quarter_idle():
    split = split_node_hour(holdings=[NodeHolding(f"r{i}", F(1, 4), 0, HOUR) for i in range(3)], cards=1)
    assert split.charged == {"r0": F(1, 4), "r1": F(1, 4), "r2": F(1, 4)}
    assert split.idle == F(1, 4)


def test_mps_replicas_are_charged_for_the_seconds_they_held():
    # 10 MPS replicas: 0.1 GE each; b holds for 1,800 s -> 0.05 card-hours
    split = split_node_hour(
        holdings=[NodeHolding("a", F(1, 10), 0, HOUR), NodeHolding("b", F(1, 10), 1800, HOUR)], cards=1
    )
    assert split.charged == {"a": F(1, 10), "b": F(1, 20)}
    assert split.idle == F(17, 20)


def test_hami_shares_on_a_known_card():
    # 25% of cores / 20 GiB of 80 -> 1/4 all hour; a half-card share for 1,200 s -> 1/6
    split = split_node_hour(
        holdings=[
            NodeHolding("quarter", F(1, 4), 0, HOUR, card="gpu-uuid-1"),
            NodeHolding("half", F(1, 2), 600, 1800, card="gpu-uuid-1"),
        ],
        cards=1,
    )
    assert split.charged == {"quarter": F(1, 4), "half": F(1, 6)}
    assert split.idle == F(7, 12)


def test_oversubscription_is_split_at_each_instant_not_over_the_hour():
    # 1 GE all hour beside 1 GE for the first half on one card: 1/4 + 1/4 then 1/2 -> 3/4 and 1/4
    # (an hour-level split would have charged 2/3 and 1/3)
    split = split_node_hour(
        holdings=[NodeHolding("a", F(1), 0, HOUR, card="c"), NodeHolding("b", F(1), 0, 1800, card="c")],
        cards=1,
    )
    assert split.charged == {"a": F(3, 4), "b": F(1, 4)}
    assert split.idle == 0


def test_unplaced_holders_share_only_the_cards_no_known_holder_sits_on():
    # a HAMi share on card x; two whole-GPU pods whose card is unknown share the other card of two
    split = split_node_hour(
        holdings=[
            NodeHolding("hami", F(1, 2), 0, HOUR, card="x"),
            NodeHolding("p1", F(1), 0, HOUR),
            NodeHolding("p2", F(1), 0, HOUR),
        ],
        cards=2,
    )
    assert split.charged == {"hami": F(1, 2), "p1": F(1, 2), "p2": F(1, 2)}
    assert split.idle == F(1, 2)


def test_a_holding_outside_the_hour_is_refused():
    with pytest.raises(ValueError, match="outside the hour"):
        split_node_hour(holdings=[NodeHolding("a", F(1), 0, HOUR + 1)], cards=1)
