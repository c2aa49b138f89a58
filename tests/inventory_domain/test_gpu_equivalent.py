"""GE arithmetic at its edges, worked by hand (mutation survivors, docs/mutation-survivors-inventory.md):
a card without slices is refused saying why, HAMi shares on cards that registered no memory or no cores
fall back to the other axis, and DRA counters with no or zero totals are skipped, never divided by."""

from decimal import ROUND_HALF_UP, Decimal, localcontext
from fractions import Fraction

import pytest

from inventory.domain.gpu_equivalent import counters_ge, ge_to_decimal, hami_share_ge, mig_ge, replica_ge

NO_SLICES = r"^a MIG-capable card has at least one compute and one memory slice$"


@pytest.mark.parametrize(("card_compute", "card_memory"), [(0, 8), (7, 0), (0, 0), (-1, 8), (7, -1)])
def test_a_card_without_compute_or_memory_slices_is_refused_saying_why(card_compute, card_memory):
    # A ValueError with the reason, not a ZeroDivisionError from 1/0 deep in the fraction.
    with pytest.raises(ValueError, match=NO_SLICES):
        mig_ge(
            compute_slices=1,
            memory_slices=1,
            card_compute_slices=card_compute,
            card_memory_slices=card_memory,
        )


def test_a_single_slice_card_is_one_whole_ge():
    # 1 compute of 1 and 1 memory of 1: max(1/1, 1/1) = 1, a valid if degenerate card.
    assert mig_ge(compute_slices=1, memory_slices=1, card_compute_slices=1, card_memory_slices=1) == 1


def test_hami_cores_default_to_a_card_of_100_percent():
    # No card_cores_percent given: 100 % of cores on a card of 100 % is the whole card, 50 % is half.
    # Memory 1024 of 40960 MiB = 1/40 is below both, so the cores dominate.
    assert hami_share_ge(cores_percent=100, memory_mib=1024, card_memory_mib=40960) == 1
    assert hami_share_ge(cores_percent=50, memory_mib=1024, card_memory_mib=40960) == Fraction(1, 2)


def test_a_hami_share_of_nothing_is_zero_ge():
    # gpumem 0 and gpucores 0 (or negative garbage): max(0/15360, 0/100) = 0, never a minimum of 1 MiB.
    assert hami_share_ge(cores_percent=0, memory_mib=0, card_memory_mib=15360) == 0
    assert hami_share_ge(cores_percent=-5, memory_mib=-1, card_memory_mib=15360) == 0


def test_a_card_that_registered_no_memory_is_charged_by_cores():
    # devmem 0 (a broken registration): the memory axis is 0, not 1/0 and not a whole card;
    # 25 % of 100 % cores = 1/4 GE.
    assert hami_share_ge(cores_percent=25, memory_mib=4096, card_memory_mib=0) == Fraction(1, 4)


def test_a_card_that_registered_no_cores_is_charged_by_memory():
    # devcore 0: the core axis is 0; 3840 of 15360 MiB = 1/4 GE.
    assert hami_share_ge(
        cores_percent=25, memory_mib=3840, card_memory_mib=15360, card_cores_percent=0
    ) == Fraction(1, 4)


def test_a_one_unit_card_axis_still_counts():
    # Registered totals of 1 MiB / 1 % are tiny but real: 1 of 1 is the whole card on either axis.
    assert hami_share_ge(cores_percent=0, memory_mib=1, card_memory_mib=1) == 1
    assert hami_share_ge(cores_percent=1, memory_mib=0, card_memory_mib=15360, card_cores_percent=1) == 1


def test_counters_without_a_usable_total_are_skipped_not_divided_by():
    # "cores" has no total on the card, "engines" a total of 0: both are skipped (listed first, so a
    # skip that stopped the loop would lose the rest); memory-slices 2 of 8 = 1/4.
    consumed = {
        "cores": Fraction(3),
        "engines": Fraction(1),
        "memory-slices": Fraction(2),
    }
    totals = {"engines": Fraction(0), "memory-slices": Fraction(8)}
    assert counters_ge(consumed=consumed, card_totals=totals) == Fraction(1, 4)
    # A counter whose card total is exactly 1 is read: 1 of 1 = the whole card.
    assert (
        counters_ge(consumed={"multiprocessors": Fraction(1)}, card_totals={"multiprocessors": Fraction(1)})
        == 1
    )


def test_one_replica_is_the_whole_unit_and_no_replicas_count_as_one():
    # replicas 1 (time-slicing configured with a single replica): 1/1 of the card, 1/1 of a 1g.10gb
    # (1/7); replicas 0 from a broken label is read as 1, never a division by zero.
    assert replica_ge(replicas=1) == 1
    assert replica_ge(replicas=1, base=Fraction(1, 7)) == Fraction(1, 7)
    assert replica_ge(replicas=0) == 1
    assert replica_ge(replicas=4) == Fraction(1, 4)


@pytest.mark.parametrize(
    ("ge", "places", "stored"),
    [
        (Fraction(1, 7), 6, "0.142857"),  # 0.1428571... cut at the sixth place
        (Fraction(2, 3), 6, "0.666667"),  # 0.6666666... rounds up
        (Fraction(1, 2), 6, "0.500000"),  # six places kept, so the column and the API show them all
        (Fraction(5, 8), 2, "0.62"),  # 0.625: a tie goes to the even cent
        (Fraction(7, 8), 2, "0.88"),  # 0.875: the even neighbour is above
        (Fraction(3, 2), 0, "2"),  # 1.5 -> 2, 2.5 -> 2 below
        (Fraction(5, 2), 0, "2"),
    ],
)
def test_a_ge_is_stored_rounded_once_half_even_to_its_places(ge, places, stored):
    value = ge_to_decimal(ge, places=places)
    assert str(value) == stored
    assert value == Decimal(stored)


def test_a_ge_is_stored_to_six_places_unless_told_otherwise():
    assert str(ge_to_decimal(Fraction(1, 14))) == "0.071429"  # 0.0714285714...


def test_a_ge_rounds_half_even_whatever_rounding_the_decimal_context_was_left_with():
    # Another library may leave the thread's context at ROUND_HALF_UP; 0.625 still goes to 0.62.
    with localcontext(rounding=ROUND_HALF_UP):
        assert str(ge_to_decimal(Fraction(5, 8), places=2)) == "0.62"
