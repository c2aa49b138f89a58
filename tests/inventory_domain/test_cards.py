"""Cards per node under every strategy, against the realworld shapes, with numbers worked out by hand.

Each case: (cards, reported or inferred, advertised units, advertised GE). Advertised GE is the sum of
what the node offers; physical capacity is the cards, whatever that sum is.
"""

from fractions import Fraction

import pytest

from inventory.domain.cards import CardBasis, count_dra_cards
from inventory.domain.dra_devices import parse_resource_slice
from inventory.domain.node_inventory import parse_node_gpu_inventory
from tests.inventory_domain import realworld


def _sample(name):
    return next(doc for doc in realworld.yaml_docs("node-capacity-samples.yaml") if doc["name"] == name)


def _described(name, key="describe_text"):
    sections = realworld.describe_sections(_sample(name)[key])
    return parse_node_gpu_inventory(
        labels=sections["Labels"], capacity=sections["Capacity"], allocatable=sections["Allocatable"]
    )


def _summary(inventory):
    units = sum(group.count for group in inventory.units)
    return inventory.physical_gpu_count, inventory.card_basis, units, inventory.total_ge


def _codes(inventory):
    return [issue.code for issue in inventory.issues]


def test_h100_mixed_all_balanced_is_one_reported_card_advertising_15_14_ge():
    inventory = parse_node_gpu_inventory(labels=realworld.json_file("node-gfd-h100-mig-mixed.labels.json"))
    # 2 x 1g.10gb (1/7) + 2g.20gb (2/7) + 3g.40gb (1/2) = 4/7 + 1/2 = 15/14 GE on one card
    assert _summary(inventory) == (1, CardBasis.REPORTED, 4, Fraction(15, 14))
    assert inventory.card_source == "label nvidia.com/gpu.count"
    assert _codes(inventory) == []


def test_h100_mig_disabled_single_strategy_is_one_reported_whole_card():
    labels = realworld.json_file("node-gfd-h100-mig-disabled-single.labels.json")
    assert _summary(parse_node_gpu_inventory(labels=labels)) == (1, CardBasis.REPORTED, 1, 1)


def test_a100_single_all_1g_5gb_seven_devices_are_one_inferred_card():
    states = realworld.json_file("node-gfd-a100-mig-single.labels.json")
    before = parse_node_gpu_inventory(labels=states["before_mig_config"])
    assert _summary(before) == (1, CardBasis.REPORTED, 1, 1)
    after = parse_node_gpu_inventory(labels=states["after_all_1g_5gb_success"])
    # gpu.count = 7 MIG devices; 1g.5gb fits 7 per A100 40GB: 7 / 7 = 1 card, 7 x 1/7 = 1 GE
    assert _summary(after) == (1, CardBasis.INFERRED, 7, 1)
    assert after.card_source == "7 x 1g.5gb / 7 per card (mig.config layout)"
    assert _codes(after) == []  # gfd.physical_count_unknown is gone for a known profile


def test_single_strategy_on_two_h100s_all_3g_40gb():
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-3g.40gb",
        "nvidia.com/gpu.count": "4",
        "nvidia.com/mig.strategy": "single",
        "nvidia.com/mig.config": "all-3g.40gb",
    }
    inventory = parse_node_gpu_inventory(labels=labels, allocatable={"nvidia.com/gpu": "4"})
    # 3g.40gb: two per H100 (memory 4 of 8 slices each): 4 / 2 = 2 cards; 4 x 1/2 = 2 GE
    assert _summary(inventory) == (2, CardBasis.INFERRED, 4, 2)


def test_single_strategy_with_renamed_time_slicing_divides_by_instances_and_replicas():
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb",
        "nvidia.com/gpu.count": "14",  # MIG devices, not replicas
        "nvidia.com/gpu.replicas": "2",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
        "nvidia.com/mig.strategy": "single",
        "nvidia.com/mig.config": "all-1g.10gb",
    }
    inventory = parse_node_gpu_inventory(
        labels=labels, allocatable={"nvidia.com/gpu": "0", "nvidia.com/gpu.shared": "28"}
    )
    # 28 advertised / (7 instances x 2 replicas) = 2 cards; each replica 1/7 / 2 = 1/14 GE, 28/14 = 2
    assert _summary(inventory) == (2, CardBasis.INFERRED, 28, 2)
    assert inventory.renamed
    assert _codes(inventory) == []


def test_uneven_single_strategy_count_raises_its_issue_and_counts_the_partial_card_once():
    labels = {
        "nvidia.com/gpu.product": "A100-SXM4-40GB-MIG-1g.5gb",
        "nvidia.com/gpu.count": "9",
        "nvidia.com/mig.strategy": "single",
    }
    inventory = parse_node_gpu_inventory(labels=labels, allocatable={"nvidia.com/gpu": "9"})
    # 9 = 7 + 2: one full card and one partly carved card, 2 cards; 9 x 1/7 = 9/7 GE advertised
    assert _summary(inventory) == (2, CardBasis.INFERRED, 9, Fraction(9, 7))
    assert _codes(inventory) == ["cards.uneven"]
    assert inventory.card_source == "9 x 1g.5gb / 7 per card (MIG profile table)"


def test_an_unknown_single_strategy_profile_still_says_the_count_is_unknown():
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-5g.60gb",
        "nvidia.com/gpu.count": "2",
        "nvidia.com/mig.strategy": "single",
    }
    inventory = parse_node_gpu_inventory(labels=labels)
    assert (inventory.physical_gpu_count, inventory.card_basis) == (None, CardBasis.UNKNOWN)
    assert "gfd.physical_count_unknown" in _codes(inventory)


def test_whole_gpus_and_mig_over_the_same_cards_count_each_card_once():
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": "2",
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig-1g.10gb.count": "14",
    }
    allocatable = {"nvidia.com/gpu": "2", "nvidia.com/mig-1g.10gb": "14"}
    inventory = parse_node_gpu_inventory(labels=labels, allocatable=allocatable)
    # 2 whole GPUs + 14 x 1g.10gb (7 per card: 2 cards) would be 4 cards on a 2-card node: 2 cards,
    # flagged; the node still advertises 2 + 14/7 = 4 GE, twice what is there
    assert _summary(inventory) == (2, CardBasis.REPORTED, 16, 4)
    assert _codes(inventory) == ["cards.whole_and_mig_overlap"]


def test_a_mixed_node_with_one_whole_and_one_carved_card_is_not_flagged():
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": "2",
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig-4g.40gb.count": "1",
        "nvidia.com/mig-3g.40gb.count": "1",
    }
    allocatable = {"nvidia.com/gpu": "1", "nvidia.com/mig-4g.40gb": "1", "nvidia.com/mig-3g.40gb": "1"}
    inventory = parse_node_gpu_inventory(labels=labels, allocatable=allocatable)
    # 4g.40gb + 3g.40gb use 7/7 compute and 4+4 = 8/8 memory slices: one card; + 1 whole = 2 cards.
    # Advertised GE 1 + 4/7 + 1/2 = 29/14, above the 2 cards
    assert _summary(inventory) == (2, CardBasis.REPORTED, 3, Fraction(29, 14))
    assert _codes(inventory) == []


def test_cocalc_mixed_node_without_labels_infers_one_card():
    status = _sample("a100-40gb-mig-mixed-partial-zero")["status"]
    inventory = parse_node_gpu_inventory(labels={}, allocatable=status["allocatable"])
    # 5 x 1g.5gb + 2g.10gb: compute 5 + 2 = 7 of 7, memory 5 + 2 = 7 of 8: one card; GE 5/7 + 2/7 = 1
    assert _summary(inventory) == (1, CardBasis.INFERRED, 6, 1)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # 4 cards x 4 replicas of 1/4 GE
        ("t4-timeslicing-renameByDefault-false", (4, CardBasis.REPORTED, 16, 4)),
        ("t4-timeslicing-renameByDefault-true", (4, CardBasis.REPORTED, 16, 4)),
    ],
)
def test_t4_time_slicing_is_four_reported_cards(name, expected):
    doc = _sample(name)
    inventory = parse_node_gpu_inventory(labels=doc["labels"], allocatable=doc["status"]["allocatable"])
    assert _summary(inventory) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("t4-mps-renameByDefault-false", (4, CardBasis.REPORTED, 16, 4)),
        ("h100-xe9680-no-mig-labels", (8, CardBasis.REPORTED, 8, 8)),
        # no gpu.count and nothing advertised in these excerpts: no card is invented
        ("h100nvl-mps-20-replicas-labels", (None, CardBasis.UNKNOWN, 0, 0)),
        ("a30-openstack-labels", (None, CardBasis.UNKNOWN, 0, 0)),
    ],
)
def test_described_nodes(name, expected):
    assert _summary(_described(name)) == expected


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("describe_text_none", (1, CardBasis.INFERRED, 1, 1)),
        # no product label: seven nvidia.com/gpu look like seven whole cards, all a capacity map can say
        ("describe_text_single_7x1g10gb", (7, CardBasis.INFERRED, 7, 7)),
        # 1g.10gb + 2g.20gb + 3g.40gb: compute 6 of 7, memory 1 + 2 + 4 = 7 of 8: 1 card;
        # GE 1/7 + 2/7 + 1/2 = 13/14
        ("describe_text_mixed_3g_2g_1g", (1, CardBasis.INFERRED, 3, Fraction(13, 14))),
    ],
)
def test_a100_80gb_azure_strategies(key, expected):
    assert _summary(_described("a100-80gb-pcie-mig-strategies-azure", key)) == expected


def test_a100_80gb_single_with_the_product_label_is_one_inferred_card():
    inventory = parse_node_gpu_inventory(
        labels={"nvidia.com/gpu.product": "NVIDIA-A100-80GB-PCIe-MIG-1g.10gb"},
        capacity={"nvidia.com/gpu": "7"},
    )
    assert _summary(inventory) == (1, CardBasis.INFERRED, 7, 1)


def test_hami_cards_come_from_the_register_not_the_split_count():
    sections = realworld.describe_sections(_sample("hami-node-vgpu-split")["describe_text"])
    register = "GPU-aaaa,10,15360,100,NVIDIA-Tesla T4,0,true:GPU-bbbb,10,15360,100,NVIDIA-Tesla T4,0,true:"
    inventory = parse_node_gpu_inventory(
        labels={},
        allocatable=sections["Allocatable"],
        annotations={"hami.io/node-nvidia-register": register},
    )
    # nvidia.com/gpu: 100 is cards x splits; the register lists 2 cards
    assert _summary(inventory) == (2, CardBasis.REPORTED, 2, 2)
    assert inventory.card_source == "annotation hami.io/node-nvidia-register"


def test_hami_node_annotations_file_cards():
    for doc in realworld.yaml_docs("hami-node-annotations.yaml"):
        annotations = (doc.get("metadata") or {}).get("annotations") if isinstance(doc, dict) else None
        register = (annotations or {}).get("hami.io/node-nvidia-register")
        if not register:
            continue
        inventory = parse_node_gpu_inventory(
            labels={}, annotations={"hami.io/node-nvidia-register": register}
        )
        assert inventory.card_basis is CardBasis.REPORTED
        assert inventory.physical_gpu_count == len(inventory.hami.devices) > 0


def test_dra_slices_count_cards_by_uuid_and_parent_uuid():
    slices = [
        parse_resource_slice(obj=obj)
        for obj in realworld.k8s_objects("resourceslice-nvidia-gpu.yaml", kinds={"ResourceSlice"})
    ]
    by_node = {
        s.node_name or s.pool_name: count_dra_cards(devices=[d.attributes for d in s.devices]) for s in slices
    }
    # AKS GPU pool: gpu-1 (its uuid); AKS MIG pool: one 1g.10gb whose parentUUID is the card;
    # node1: gpu-0 (uuid GPU-1371...) and a MIG device of another card (parent GPU-ddf6...): 2 cards
    assert by_node["aks-gpupool-15127565-vmss000002"].cards == 1
    assert by_node["aks-migpool-68842551-vmss000001"].cards == 1
    assert by_node["node1"].cards == 2
    assert {c.basis for c in by_node.values()} == {CardBasis.REPORTED}


def test_a_dra_card_published_whole_and_carved_is_one_card():
    devices = [
        {"type": "gpu", "uuid": "GPU-1"},
        {"type": "mig", "uuid": "MIG-a", "parentUUID": "GPU-1"},
        {"type": "mig", "uuid": "MIG-b", "parentUUID": "GPU-1"},
        {"type": "mig", "uuid": "MIG-c", "parentUUID": "GPU-2"},
    ]
    assert count_dra_cards(devices=devices).cards == 2
