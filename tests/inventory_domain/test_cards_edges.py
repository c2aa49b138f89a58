"""Card counting at its edges, worked by hand (mutation survivors, docs/mutation-survivors-inventory.md):
the whole CardCount is compared, so the issue texts and sources an operator reads on the node page are
pinned along with the numbers."""

from inventory.domain.cards import (
    COUNTS_DISAGREE,
    PROFILE_UNKNOWN,
    UNEVEN,
    WHOLE_AND_MIG_OVERLAP,
    CardBasis,
    CardCount,
    MigDeviceCount,
    cards_for_mig_instances,
    count_dra_cards,
    count_mixed_cards,
    count_single_strategy_cards,
    mig_device_counts,
)
from inventory.domain.gpu_models import resolve_gpu_model
from inventory.domain.issues import warning

H100 = resolve_gpu_model(product="NVIDIA-H100-80GB-HBM3")
P = {profile.name: profile for profile in H100.mig_profiles}


def test_single_strategy_with_an_unknown_profile_says_the_count_is_not_derivable():
    count = count_single_strategy_cards(
        profile=None, profile_name="3g.39gb", devices_label=4, advertised=4, replicas=1, mig_config=None
    )
    assert count == CardCount(
        None,
        CardBasis.UNKNOWN,
        "",
        (
            warning(
                PROFILE_UNKNOWN,
                "MIG profile 3g.39gb not in the profile table; card count not derivable",
                source="label nvidia.com/gpu.product",
            ),
        ),
    )


def test_single_strategy_with_uneven_replicas_and_devices_counts_each_partial_unit_once():
    # 30 advertised 1g.10gb with 4 replicas: 7 devices x 4 = 28, 2 left over -> 8 devices (one partly
    # replicated). 8 devices at 7 per card: 1 full card + 1 device -> 2 cards. Two UNEVEN warnings.
    count = count_single_strategy_cards(
        profile=P["1g.10gb"],
        profile_name="1g.10gb",
        devices_label=None,
        advertised=30,
        replicas=4,
        mig_config=None,
    )
    assert count == CardCount(
        2,
        CardBasis.INFERRED,
        "8 x 1g.10gb / 7 per card (MIG profile table), 4 replicas each",
        (
            warning(
                UNEVEN,
                "30 advertised is not a whole number of MIG devices x 4 replicas",
                source="allocatable",
            ),
            warning(
                UNEVEN, "8 x 1g.10gb is not a multiple of 7 per card", source="label nvidia.com/gpu.count"
            ),
        ),
    )


def test_single_strategy_trusts_the_advertised_count_over_a_lagging_label():
    # all-3g.40gb with 2 replicas: 6 advertised / 2 = 3 devices, the label still says 4. 3 devices at
    # 2 per card: 1 card + 1 device -> 2 cards.
    count = count_single_strategy_cards(
        profile=P["3g.40gb"],
        profile_name="3g.40gb",
        devices_label=4,
        advertised=6,
        replicas=2,
        mig_config="all-3g.40gb",
    )
    assert count == CardCount(
        2,
        CardBasis.INFERRED,
        "3 x 3g.40gb / 2 per card (mig.config layout), 2 replicas each",
        (
            warning(
                COUNTS_DISAGREE,
                "gpu.count says 4 MIG devices, the node advertises 3",
                source="label nvidia.com/gpu.count",
            ),
            warning(
                UNEVEN, "3 x 3g.40gb is not a multiple of 2 per card", source="label nvidia.com/gpu.count"
            ),
        ),
    )


def test_single_strategy_with_neither_label_nor_allocatable_is_unknown_without_issues():
    count = count_single_strategy_cards(
        profile=P["3g.40gb"],
        profile_name="3g.40gb",
        devices_label=None,
        advertised=None,
        replicas=1,
        mig_config=None,
    )
    assert count == CardCount(None, CardBasis.UNKNOWN, "", ())


def test_instances_need_as_many_cards_as_their_compute_slices_fill():
    # 3 x 2g.20gb + 2 x 1g.10gb: compute 6 + 2 = 8 > 7 -> 2 cards; memory 6 + 2 = 8 fits one card.
    devices = [MigDeviceCount(P["2g.20gb"], 3), MigDeviceCount(P["1g.10gb"], 2)]
    assert cards_for_mig_instances(model=H100, devices=devices) == 2


def test_instances_need_as_many_cards_as_their_memory_slices_fill():
    # 2 x 3g.40gb + 1 x 1g.10gb: compute 6 + 1 = 7 fits; memory 8 + 1 = 9 > 8 -> 2 cards.
    devices = [MigDeviceCount(P["3g.40gb"], 2), MigDeviceCount(P["1g.10gb"], 1)]
    assert cards_for_mig_instances(model=H100, devices=devices) == 2


def test_one_media_instance_per_card_needs_a_card_each():
    # 2 x 1g.10gb+me: 2 of 7 compute and 2 of 8 memory slices, but only one +me fits a card -> 2 cards.
    assert cards_for_mig_instances(model=H100, devices=[MigDeviceCount(P["1g.10gb+me"], 2)]) == 2


def test_a_mixed_node_without_a_label_counts_whole_gpus_and_carved_cards():
    # 1 whole GPU + 1 x 3g.40gb (one instance is a carved card): 2 cards, said how.
    count = count_mixed_cards(
        model=H100, count_label=None, whole_advertised=1, mig=[MigDeviceCount(P["3g.40gb"], 1)]
    )
    assert count == CardCount(2, CardBasis.INFERRED, "1 whole GPUs advertised, MIG instances fit on 1 cards")
    only_whole = count_mixed_cards(model=H100, count_label=None, whole_advertised=2, mig=[])
    assert only_whole == CardCount(2, CardBasis.INFERRED, "2 whole GPUs advertised")


def test_a_mixed_node_advertising_nothing_has_an_unknown_count():
    assert count_mixed_cards(model=H100, count_label=None, whole_advertised=0, mig=[]) == CardCount(
        None, CardBasis.UNKNOWN, ""
    )


def test_unplaced_instances_on_an_unknown_card_assume_seven_compute_slices():
    # Unknown model, 8 compute slices of instances its table lacks: 8 / 7 rounded up = 2 cards.
    gh200 = resolve_gpu_model(product="NVIDIA GH200 96GB HBM3", memory_mib=97871)
    count = count_mixed_cards(
        model=gh200, count_label=None, whole_advertised=0, mig=[], unplaced_compute_slices=8
    )
    assert count == CardCount(2, CardBasis.INFERRED, "MIG instances fit on 2 cards")


def test_whole_gpus_over_carved_cards_beyond_the_label_are_flagged_with_both_numbers():
    count = count_mixed_cards(
        model=H100, count_label=2, whole_advertised=2, mig=[MigDeviceCount(P["3g.40gb"], 1)]
    )
    assert count == CardCount(
        2,
        CardBasis.REPORTED,
        "label nvidia.com/gpu.count",
        (
            warning(
                WHOLE_AND_MIG_OVERLAP,
                "2 whole GPUs and MIG instances needing 1 cards advertised over 2 cards",
                source="allocatable nvidia.com/gpu",
            ),
        ),
    )


def test_carved_cards_beyond_the_label_are_flagged_as_disagreeing():
    # 6 x 3g.40gb at 2 per card need 3 cards; the label says 2. The label's count stands.
    count = count_mixed_cards(
        model=H100, count_label=2, whole_advertised=0, mig=[MigDeviceCount(P["3g.40gb"], 6)]
    )
    assert count == CardCount(
        2,
        CardBasis.REPORTED,
        "label nvidia.com/gpu.count",
        (
            warning(
                COUNTS_DISAGREE,
                "advertised units need 3 cards, gpu.count says 2",
                source="label nvidia.com/gpu.count",
            ),
        ),
    )


def test_dra_cards_are_uuids_and_mig_parents_and_unnamed_whole_devices_count_one_each():
    devices = [
        {"type": "gpu", "uuid": "GPU-a"},  # card a
        {"type": "mig", "uuid": "MIG-1", "parentUUID": "GPU-b"},  # card b
        {"uuid": "MIG-2", "parentUUID": "GPU-b"},  # no type, but a parent: still card b
        {"type": "mig", "uuid": "MIG-3"},  # MIG without a parent: no card to name, left out
        {"type": "gpu", "uuid": ""},  # whole, unnamed: a card of its own
        {"type": "gpu", "uuid": ""},  # and another
    ]
    # {a, b} + 2 unnamed = 4 cards
    assert count_dra_cards(devices=devices) == CardCount(4, CardBasis.REPORTED, "ResourceSlice devices")


def test_no_dra_devices_or_only_orphan_mig_devices_is_an_unknown_count():
    assert count_dra_cards(devices=[]) == CardCount(None, CardBasis.UNKNOWN, "")
    assert count_dra_cards(devices=[{"type": "mig", "uuid": "MIG-3"}]) == CardCount(
        None, CardBasis.UNKNOWN, ""
    )


def test_profiles_with_no_instances_are_left_out_and_single_instances_kept():
    found = mig_device_counts(model=H100, instances_by_profile={"1g.10gb": 0, "3g.40gb": 1})
    assert found == (MigDeviceCount(P["3g.40gb"], 1),)
