"""The card-hour split: hand-worked examples, and charged + idle = card-hours exactly for every kind of
holder (whole, MIG, time-slicing, MPS, HAMi, DRA)."""

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inventory.domain.card_hours import Holding, split_card_hours, split_node_hours
from inventory.domain.gpu_equivalent import counters_ge, hami_share_ge, replica_ge
from inventory.domain.gpu_models import resolve_gpu_model

H100 = resolve_gpu_model(product="NVIDIA-H100-80GB-HBM3")


def _ge(profile: str) -> Fraction:
    found = H100.mig_profile(profile)
    assert found is not None
    return found.ge


def test_4g_and_3g_on_one_h100_sum_above_the_card_and_are_scaled_to_it():
    # 4g.40gb = max(4/7, 4/8) = 4/7; 3g.40gb = max(3/7, 4/8) = 1/2; sum 15/14 > 1
    split = split_card_hours(
        holdings=[Holding("a", _ge("4g.40gb")), Holding("b", _ge("3g.40gb"))], hours=Fraction(1)
    )
    assert split.charged == {"a": Fraction(4, 7) / Fraction(15, 14), "b": Fraction(1, 2) / Fraction(15, 14)}
    assert split.charged == {"a": Fraction(8, 15), "b": Fraction(7, 15)}
    assert split.idle == 0


def test_the_all_balanced_layout_fully_held_for_three_hours():
    # 1g + 1g + 2g + 3g = 1/7 + 1/7 + 2/7 + 1/2 = 15/14 per card: each pays 14/15 of its GE x 3 hours
    holdings = [
        Holding("v1", _ge("1g.10gb")),
        Holding("v2", _ge("1g.10gb")),
        Holding("n", _ge("2g.20gb")),
        Holding("r", _ge("3g.40gb")),
    ]
    split = split_card_hours(holdings=holdings, hours=Fraction(3))
    assert split.charged == {
        "v1": Fraction(2, 5),
        "v2": Fraction(2, 5),
        "n": Fraction(4, 5),
        "r": Fraction(7, 5),
    }
    assert (split.card_hours, split.idle) == (3, 0)


def test_one_of_four_time_slicing_replicas_for_half_an_hour_leaves_three_quarters_idle():
    split = split_card_hours(holdings=[Holding("a", replica_ge(replicas=4))], hours=Fraction(1, 2))
    assert split.charged == {"a": Fraction(1, 8)}
    assert split.idle == Fraction(3, 8)


def test_a_hami_share_and_a_stranded_mig_slot():
    # HAMi: 30% cores, 8 GiB of a 15360 MiB T4 -> max(3/10, 8192/15360 = 8/15) = 8/15
    hami = hami_share_ge(cores_percent=30, memory_mib=8192, card_memory_mib=15360)
    split = split_card_hours(holdings=[Holding("h", hami)], hours=Fraction(2))
    assert split.charged == {"h": Fraction(16, 15)}
    assert split.idle == Fraction(14, 15)


def test_placement_unknown_splits_over_the_node_cards():
    # 10 whole-GPU-equivalents claimed on an 8-card node for an hour: each pays 8/10 of its GE
    holdings = [Holding("a", Fraction(6)), Holding("b", Fraction(4))]
    split = split_node_hours(holdings=holdings, cards=8, hours=Fraction(1))
    assert split.charged == {"a": Fraction(24, 5), "b": Fraction(16, 5)}
    assert split.idle == 0
    # 3 GE on the same node: charged as held, 5 card-hours idle
    light = split_node_hours(holdings=[Holding("a", Fraction(3))], cards=8, hours=Fraction(1))
    assert (light.charged["a"], light.idle) == (3, 5)


def test_negative_inputs_are_refused():
    with pytest.raises(ValueError):
        split_card_hours(holdings=[Holding("a", Fraction(-1))], hours=Fraction(1))


_whole = st.just(Fraction(1))
_mig = st.sampled_from([p.ge for p in H100.mig_profiles])
_time_slice = st.integers(1, 64).map(lambda r: replica_ge(replicas=r))
_mps = st.tuples(st.sampled_from([p.ge for p in H100.mig_profiles] + [Fraction(1)]), st.integers(1, 48)).map(
    lambda pair: replica_ge(replicas=pair[1], base=pair[0])
)
_hami = st.tuples(st.integers(0, 100), st.integers(0, 81559)).map(
    lambda pair: hami_share_ge(cores_percent=pair[0], memory_mib=pair[1], card_memory_mib=81559)
)
_dra = st.one_of(
    _whole,
    _mig,
    st.integers(0, 8).map(
        lambda used: counters_ge(
            consumed={"memory-slices": Fraction(used)}, card_totals={"memory-slices": Fraction(8)}
        )
    ),
)
_holder_ge = st.one_of(_whole, _mig, _time_slice, _mps, _hami, _dra)
_hours = st.fractions(min_value=0, max_value=744, max_denominator=3600)


@given(ges=st.lists(_holder_ge, max_size=12), hours=_hours)
def test_charged_plus_idle_is_the_card_hours_exactly_on_one_card(ges, hours):
    split = split_card_hours(holdings=[Holding(str(i), ge) for i, ge in enumerate(ges)], hours=hours)
    assert split.charged_total + split.idle == hours
    assert split.idle >= 0
    assert all(share >= 0 for share in split.charged.values())
    # nobody pays more than it holds, and an undersubscribed card charges exactly what is held
    assert all(split.charged[str(i)] <= ge * hours for i, ge in enumerate(ges))
    if sum(ges) <= 1:
        assert split.charged_total == sum(ges) * hours


@given(ges=st.lists(_holder_ge, max_size=40), cards=st.integers(1, 8), hours=_hours)
def test_charged_plus_idle_is_the_card_hours_exactly_on_a_node(ges, cards, hours):
    split = split_node_hours(
        holdings=[Holding(str(i), ge) for i, ge in enumerate(ges)], cards=cards, hours=hours
    )
    assert split.charged_total + split.idle == cards * hours
    assert split.idle >= 0
    assert split.charged_total == min(sum(ges, Fraction(0)), cards) * hours
