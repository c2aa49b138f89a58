"""How a node's cards are counted from what it advertises, and the issues its bad labels raise, worked by
hand (mutation survivors, docs/mutation-survivors-node-inventory.md)."""

from fractions import Fraction

from inventory.domain.issues import warning
from inventory.domain.node_inventory import CardBasis, parse_node_gpu_inventory
from inventory.domain.shareable_units import ShareableUnitGroup, UnitKind

H100_MIXED = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/mig.strategy": "mixed"}
A100_40_MIXED = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/mig.strategy": "mixed"}


def _cards(inventory):
    return (inventory.physical_gpu_count, inventory.card_basis, inventory.card_source)


def test_every_bad_label_and_quantity_is_reported_with_its_value_and_where_it_was():
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": "eight",
        "nvidia.com/gpu.replicas": "",  # empty: absent, not a bad number
        "nvidia.com/mig.strategy": "weird",
        "nvidia.com/gpu.sharing-strategy": "magic",
    }
    inventory = parse_node_gpu_inventory(
        labels=labels, capacity={"nvidia.com/gpu": "lots"}, allocatable={"nvidia.com/gpu": "many"}
    )
    bad_count = warning("gfd.bad_number", "not a count: 'eight'", source="label nvidia.com/gpu.count")
    assert inventory.issues == (
        warning(
            "node.bad_quantity",
            "not a quantity: 'lots' (no leading number)",
            source="capacity nvidia.com/gpu",
        ),
        warning(
            "node.bad_quantity",
            "not a quantity: 'many' (no leading number)",
            source="allocatable nvidia.com/gpu",
        ),
        warning("gfd.unknown_mig_strategy", "'weird'", source="label nvidia.com/mig.strategy"),
        warning("gfd.unknown_sharing_strategy", "'magic'", source="label nvidia.com/gpu.sharing-strategy"),
        bad_count,  # read for the card count
        bad_count,  # and again for the units
    )
    assert (inventory.capacity, inventory.allocatable, inventory.units) == ({}, {}, ())
    assert _cards(inventory) == (None, CardBasis.UNKNOWN, "")


def test_a_model_read_off_mig_labels_says_which_profiles_gave_it_away():
    labels = {"nvidia.com/mig.strategy": "mixed", "nvidia.com/mig-1g.5gb.count": "7"}
    inventory = parse_node_gpu_inventory(labels=labels)
    assert inventory.model.key == "A100-40GB"
    assert inventory.issues == (
        warning("node.model_inferred", "no product label; ['1g.5gb'] only exist on A100-40GB"),
    )
    # 7 x 1g.5gb from the labels fill one A100 40GB
    assert _cards(inventory) == (1, CardBasis.INFERRED, "MIG instances fit on 1 cards")
    assert [(u.count, u.ge_each) for u in inventory.units] == [(7, Fraction(1, 7))]


def test_a_single_strategy_profile_outside_the_table_names_itself_and_gives_no_count():
    labels = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-9g.99gb", "nvidia.com/gpu.count": "2"}
    inventory = parse_node_gpu_inventory(labels=labels)
    assert _cards(inventory) == (None, CardBasis.UNKNOWN, "")
    assert inventory.issues[0] == warning(
        "gfd.physical_count_unknown",
        "MIG profile 9g.99gb not in the profile table; card count not derivable",
        source="label nvidia.com/gpu.product",
    )


def test_time_sliced_cards_without_a_count_label_are_the_advertised_replicas_over_replicas():
    labels = {"nvidia.com/gpu.product": "Tesla-T4-SHARED", "nvidia.com/gpu.replicas": "4"}
    inventory = parse_node_gpu_inventory(labels=labels, allocatable={"nvidia.com/gpu": "16"})
    assert _cards(inventory) == (4, CardBasis.INFERRED, "4 whole GPUs advertised")
    assert [(u.count, u.gpu_index) for u in inventory.units] == [(4, i) for i in range(4)]


def test_a_profiles_own_replicas_label_divides_its_advertised_count():
    # mig-3g.20gb 6 at 3 replicas = 2 instances = one A100 40GB (2 x 3g.20gb per card), not 3 cards.
    labels = {**A100_40_MIXED, "nvidia.com/mig-3g.20gb.count": "2", "nvidia.com/mig-3g.20gb.replicas": "3"}
    inventory = parse_node_gpu_inventory(labels=labels, allocatable={"nvidia.com/mig-3g.20gb": "6"})
    assert _cards(inventory) == (1, CardBasis.INFERRED, "MIG instances fit on 1 cards")


def test_the_node_replicas_do_not_divide_a_mig_resource_that_is_not_shared():
    # gpu.replicas 2 is for shared resources; plain mig-3g.20gb 4 is 4 instances = 2 A100 40GB.
    labels = {**A100_40_MIXED, "nvidia.com/gpu.replicas": "2"}
    inventory = parse_node_gpu_inventory(labels=labels, allocatable={"nvidia.com/mig-3g.20gb": "4"})
    assert _cards(inventory) == (2, CardBasis.INFERRED, "MIG instances fit on 2 cards")


def test_plain_and_renamed_resources_of_one_profile_add_up():
    # 7 plain + 14 shared / 2 replicas = 14 x 1g.5gb: two A100 40GB (7 per card).
    labels = {**A100_40_MIXED, "nvidia.com/gpu.replicas": "2"}
    inventory = parse_node_gpu_inventory(
        labels=labels, allocatable={"nvidia.com/mig-1g.5gb": "7", "nvidia.com/mig-1g.5gb.shared": "14"}
    )
    assert _cards(inventory) == (2, CardBasis.INFERRED, "MIG instances fit on 2 cards")


def test_unknown_profiles_on_an_unknown_card_add_their_compute_slices():
    # No model: 3 x 3g + 1 x 4g = 13 compute slices on 7-slice cards -> at least 2 cards.
    inventory = parse_node_gpu_inventory(
        labels={}, allocatable={"nvidia.com/mig-3g.50gb": "3", "nvidia.com/mig-4g.60gb": "1"}
    )
    assert _cards(inventory) == (2, CardBasis.INFERRED, "MIG instances fit on 2 cards")


def test_a_profile_the_table_lacks_shares_the_cards_with_the_known_ones():
    # 4g.40gb (known, 4 slices) + 4g.50gb (not an H100 profile, 4 slices by its name) = 8 > 7: 2 cards.
    inventory = parse_node_gpu_inventory(
        labels=H100_MIXED, allocatable={"nvidia.com/mig-4g.40gb": "1", "nvidia.com/mig-4g.50gb": "1"}
    )
    assert _cards(inventory) == (2, CardBasis.INFERRED, "MIG instances fit on 2 cards")
    assert inventory.units == (
        ShareableUnitGroup(
            UnitKind.MIG_INSTANCE, "nvidia.com/mig-4g.40gb", 1, Fraction(4, 7), "H100-80GB", 40320, "4g.40gb"
        ),
        ShareableUnitGroup(
            UnitKind.MIG_INSTANCE, "nvidia.com/mig-4g.50gb", 1, Fraction(4, 7), "H100-80GB", None, "4g.50gb"
        ),
    )
    assert [issue.code for issue in inventory.issues] == ["mig.profile_unknown", "mig.ge_estimated"]


def test_known_instances_are_counted_once_beside_an_unknown_profile():
    # 4g.40gb (4 slices) + 2g.30gb (unknown, 2 slices) = 6 <= 7: still one H100.
    inventory = parse_node_gpu_inventory(
        labels=H100_MIXED, allocatable={"nvidia.com/mig-4g.40gb": "1", "nvidia.com/mig-2g.30gb": "1"}
    )
    assert _cards(inventory) == (1, CardBasis.INFERRED, "MIG instances fit on 1 cards")
