"""GFD labels + capacity -> NodeGpuInventory, against every realworld node file."""

from fractions import Fraction

import pytest

from inventory.domain.node_inventory import (
    CardBasis,
    MigStrategy,
    SharingStrategy,
    parse_node_gpu_inventory,
    parse_node_object,
)
from inventory.domain.shareable_units import UnitKind, expand_units
from tests.inventory_domain import realworld


def _units(inventory):
    return [(u.kind, u.resource_name, u.count, u.ge_each, u.mig_profile) for u in inventory.units]


def _sample(name):
    return next(doc for doc in realworld.yaml_docs("node-capacity-samples.yaml") if doc["name"] == name)


def test_h100_mixed_strategy_node():
    labels = realworld.json_file("node-gfd-h100-mig-mixed.labels.json")
    inventory = parse_node_gpu_inventory(node_name="s4124-0073", labels=labels)
    assert inventory.model.key == "H100-80GB"
    assert inventory.physical_gpu_count == 1
    assert inventory.gpu_memory_mib == 81559
    assert inventory.mig_strategy is MigStrategy.MIXED
    assert (inventory.mig_config, inventory.mig_config_state) == ("all-balanced", "success")
    assert inventory.mig_capable is True
    assert inventory.sharing_strategy is SharingStrategy.NONE
    assert inventory.replicas == 1  # gpu.replicas "0" in this older dump means not shared
    assert {(d.profile, d.count, d.memory_mib) for d in inventory.mig_devices} == {
        ("1g.10gb", 2, 9984),
        ("2g.20gb", 1, 20096),
        ("3g.40gb", 1, 40320),
    }
    # all-balanced on H100 = 2x1g.10gb + 1x2g.20gb + 1x3g.40gb; GE 1/7 each, 2/7, 1/2
    assert _units(inventory) == [
        (UnitKind.MIG_INSTANCE, "nvidia.com/mig-1g.10gb", 2, Fraction(1, 7), "1g.10gb"),
        (UnitKind.MIG_INSTANCE, "nvidia.com/mig-2g.20gb", 1, Fraction(2, 7), "2g.20gb"),
        (UnitKind.MIG_INSTANCE, "nvidia.com/mig-3g.40gb", 1, Fraction(1, 2), "3g.40gb"),
    ]
    assert inventory.issues == ()


def test_h100_mig_disabled_single_strategy_node():
    labels = realworld.json_file("node-gfd-h100-mig-disabled-single.labels.json")
    inventory = parse_node_gpu_inventory(labels=labels)
    assert inventory.mig_strategy is MigStrategy.SINGLE
    assert inventory.mig_config == "all-disabled"
    assert inventory.physical_gpu_count == 1
    assert _units(inventory) == [(UnitKind.WHOLE_GPU, "nvidia.com/gpu", 1, Fraction(1), None)]
    assert inventory.issues == ()


def test_a100_single_strategy_states_before_and_after_mig():
    states = realworld.json_file("node-gfd-a100-mig-single.labels.json")
    before = parse_node_gpu_inventory(labels=states["before_mig_config"])
    assert before.model.key == "A100-40GB"
    assert before.gpu_memory_mib == 40536
    assert _units(before) == [(UnitKind.WHOLE_GPU, "nvidia.com/gpu", 1, Fraction(1), None)]

    after = parse_node_gpu_inventory(labels=states["after_all_1g_5gb_success"])
    # gpu.count=7 counts MIG devices; all-1g.5gb makes 7 per card, so one card
    assert after.physical_gpu_count == 1
    assert after.gpu_memory_mib == 40536  # the card, not the 4864 MiB of the MIG device label
    assert after.mig_devices[0].memory_mib == 4864
    assert _units(after) == [(UnitKind.MIG_INSTANCE, "nvidia.com/gpu", 7, Fraction(1, 7), "1g.5gb")]
    assert after.total_ge == 1

    pending = parse_node_gpu_inventory(labels={**states["before_mig_config"], **states["transition_pending"]})
    assert pending.mig_reconfiguring
    rebooting = parse_node_gpu_inventory(labels=states["transition_rebooting_WITH_REBOOT"])
    assert rebooting.mig_reconfiguring
    assert not rebooting.has_gpus


def test_relabelled_single_node_counts_cards_from_what_it_advertises_and_flags_the_stale_label():
    states = realworld.json_file("node-gfd-a100-mig-single.labels.json")
    labels = {**states["after_all_1g_5gb_success"], **states["after_relabel_all_3g_20gb_partial"]}
    inventory = parse_node_gpu_inventory(labels=labels, capacity={"nvidia.com/gpu": "2"})
    assert _units(inventory) == [(UnitKind.MIG_INSTANCE, "nvidia.com/gpu", 2, Fraction(1, 2), "3g.20gb")]
    # gpu.count is still the stale 7 (of 1g.5gb); the plugin serves 2 x 3g.20gb, 2 per A100: 1 card
    assert (inventory.physical_gpu_count, inventory.card_basis) == (1, CardBasis.INFERRED)
    assert [issue.code for issue in inventory.issues] == ["cards.counts_disagree"]


def test_cocalc_mixed_node_with_only_allocatable():
    status = _sample("a100-40gb-mig-mixed-partial-zero")["status"]
    inventory = parse_node_gpu_inventory(labels={}, allocatable=status["allocatable"])
    assert inventory.model.key == "A100-40GB"  # only A100 40GB has 1g.5gb
    assert _units(inventory) == [
        (UnitKind.MIG_INSTANCE, "nvidia.com/mig-1g.5gb", 5, Fraction(1, 7), "1g.5gb"),
        (UnitKind.MIG_INSTANCE, "nvidia.com/mig-2g.10gb", 1, Fraction(2, 7), "2g.10gb"),
    ]
    assert [issue.code for issue in inventory.issues] == ["node.model_inferred"]


@pytest.mark.parametrize(
    ("name", "resource", "renamed"),
    [
        ("t4-timeslicing-renameByDefault-false", "nvidia.com/gpu", False),
        ("t4-timeslicing-renameByDefault-true", "nvidia.com/gpu.shared", True),
    ],
)
def test_t4_time_slicing_four_cards_times_four_replicas(name, resource, renamed):
    doc = _sample(name)
    inventory = parse_node_gpu_inventory(
        labels=doc["labels"], capacity=doc["status"]["capacity"], allocatable=doc["status"]["allocatable"]
    )
    assert inventory.model.key == "T4-16GB"
    assert inventory.sharing_strategy is SharingStrategy.TIME_SLICING
    assert (inventory.physical_gpu_count, inventory.replicas, inventory.renamed) == (4, 4, renamed)
    assert [(u.kind, u.resource_name, u.count, u.ge_each, u.gpu_index) for u in inventory.units] == [
        (UnitKind.TIME_SLICE_REPLICA, resource, 4, Fraction(1, 4), index) for index in range(4)
    ]
    assert inventory.total_ge == 4
    assert inventory.issues == ()


def _from_describe(doc, key="describe_text"):
    sections = realworld.describe_sections(doc[key])
    return parse_node_gpu_inventory(
        labels=sections["Labels"], capacity=sections["Capacity"], allocatable=sections["Allocatable"]
    )


def test_t4_mps_from_describe_text():
    inventory = _from_describe(_sample("t4-mps-renameByDefault-false"))
    assert inventory.sharing_strategy is SharingStrategy.MPS
    assert {u.kind for u in inventory.units} == {UnitKind.MPS_REPLICA}
    assert sum(u.count for u in inventory.units) == 16
    assert inventory.total_ge == 4


def test_h100_nvl_mps_labels_only():
    inventory = _from_describe(_sample("h100nvl-mps-20-replicas-labels"))
    assert inventory.model.key == "H100-NVL-94GB"
    assert (inventory.sharing_strategy, inventory.replicas) == (SharingStrategy.MPS, 20)
    assert inventory.mig_strategy is MigStrategy.SINGLE
    assert inventory.mig_config == "all-disabled"
    # no gpu.count label in the excerpt: no units can be claimed, and none are invented
    assert inventory.units == ()


def test_h100_xe9680_eight_whole_cards_from_labels():
    inventory = _from_describe(_sample("h100-xe9680-no-mig-labels"))
    assert inventory.model.key == "H100-80GB"
    assert inventory.physical_gpu_count == 8
    assert [u.gpu_index for u in inventory.units] == list(range(8))
    assert inventory.total_ge == 8


def test_a30_openstack_labels_replicas_zero_means_unshared():
    inventory = _from_describe(_sample("a30-openstack-labels"))
    assert inventory.model.key == "A30-24GB"
    assert inventory.gpu_memory_mib == 24576
    assert inventory.replicas == 1
    assert inventory.sharing_strategy is SharingStrategy.NONE
    assert inventory.mig_capable is True


def test_openshift_single_quoted_yaml_labels():
    doc = _sample("a100-openshift-mig-single-yaml-labels")
    labels = realworld.yaml_docs_from_text(doc["labels_yaml_verbatim"])
    inventory = parse_node_gpu_inventory(labels=labels)
    assert inventory.mig_config == "all-1g.5gb"
    assert inventory.mig_capable is True
    assert inventory.sharing_strategy is SharingStrategy.NONE


def test_hami_node_uses_the_register_not_the_split_count():
    doc = _sample("hami-node-vgpu-split")
    sections = realworld.describe_sections(doc["describe_text"])
    register = "GPU-9a3603f4-f66e-d48b-11ea-13e327064cca,10,15360,100,NVIDIA-Tesla T4,0,true:"
    inventory = parse_node_gpu_inventory(
        labels={},
        capacity=sections["Capacity"],
        allocatable=sections["Allocatable"],
        annotations={"hami.io/node-nvidia-register": register},
    )
    assert inventory.sharing_strategy is SharingStrategy.HAMI
    assert inventory.physical_gpu_count == 1
    (unit,) = inventory.units
    assert (unit.kind, unit.count, unit.ge_each, unit.split_count, unit.memory_mib) == (
        UnitKind.HAMI_GPU,
        1,
        1,
        10,
        15360,
    )
    assert unit.model_key == "T4-16GB"


def test_hami_gpumem_and_gpucores_are_pools_not_units():
    doc = _sample("hami-node-gpumem-gpucores-advertised")
    sections = realworld.describe_sections(doc["describe_text"])
    inventory = parse_node_gpu_inventory(labels={}, capacity=sections["Labels"] | sections["Capacity"])
    assert inventory.capacity["nvidia.com/gpumem"] == 16280
    assert [u.resource_name for u in inventory.units] == ["nvidia.com/gpu"]


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("describe_text_none", [(UnitKind.WHOLE_GPU, "nvidia.com/gpu", 1, Fraction(1), None)]),
        ("describe_text_single_7x1g10gb", [(UnitKind.WHOLE_GPU, "nvidia.com/gpu", 1, Fraction(1), None)] * 7),
        (
            "describe_text_mixed_3g_2g_1g",
            [
                (UnitKind.MIG_INSTANCE, "nvidia.com/mig-1g.10gb", 1, Fraction(1, 7), "1g.10gb"),
                (UnitKind.MIG_INSTANCE, "nvidia.com/mig-2g.20gb", 1, Fraction(2, 7), "2g.20gb"),
                (UnitKind.MIG_INSTANCE, "nvidia.com/mig-3g.40gb", 1, Fraction(1, 2), "3g.40gb"),
            ],
        ),
    ],
)
def test_a100_80gb_strategies_from_capacity(key, expected):
    # No labels in these excerpts: the single-strategy 7 looks like 7 cards, which is all the
    # capacity map alone can say; the product label (A100-...-MIG-1g.10gb) is what disambiguates.
    inventory = _from_describe(_sample("a100-80gb-pcie-mig-strategies-azure"), key)
    assert _units(inventory) == expected
    with_label = parse_node_gpu_inventory(
        labels={"nvidia.com/gpu.product": "NVIDIA-A100-80GB-PCIe-MIG-1g.10gb"},
        capacity={"nvidia.com/gpu": "7"},
    )
    assert _units(with_label) == [(UnitKind.MIG_INSTANCE, "nvidia.com/gpu", 7, Fraction(1, 7), "1g.10gb")]


def test_a_time_sliced_mig_profile_divides_the_instance_ge():
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig-3g.20gb.count": "2",
        "nvidia.com/mig-3g.20gb.replicas": "3",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
    }
    inventory = parse_node_gpu_inventory(labels=labels, capacity={"nvidia.com/mig-3g.20gb": "6"})
    (unit,) = inventory.units
    assert (unit.kind, unit.count, unit.ge_each) == (UnitKind.TIME_SLICE_REPLICA, 6, Fraction(1, 6))
    assert inventory.total_ge == 1


def test_replicas_16384_stay_one_group_per_card():
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": "8",
        "nvidia.com/gpu.replicas": "16384",
    }
    inventory = parse_node_gpu_inventory(labels=labels, capacity={"nvidia.com/gpu": str(8 * 16384)})
    assert len(inventory.units) == 8
    assert inventory.total_ge == 8
    assert len(list(expand_units(inventory.units[0]))) == 16384


def test_garbage_labels_and_quantities_are_issues_not_crashes():
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": "eight",
        "nvidia.com/gpu.replicas": "-3",
        "nvidia.com/mig.strategy": "weird",
        "nvidia.com/gpu.sharing-strategy": "magic",
        "nvidia.com/mig-9g.99gb.count": "1",
    }
    inventory = parse_node_gpu_inventory(
        labels=labels,
        capacity={"nvidia.com/gpu": "lots", "nvidia.com/mig-9g.99gb": "1", "nvidia.com/foo": "2"},
        annotations={"hami.io/node-nvidia-register": "GPU-x,ten,1,1,T,0,true:"},
    )
    codes = {issue.code for issue in inventory.issues}
    assert {
        "gfd.bad_number",
        "gfd.unknown_mig_strategy",
        "gfd.unknown_sharing_strategy",
        "node.bad_quantity",
        "mig.profile_unknown",
        "mig.ge_estimated",
        "node.unknown_gpu_resource",
        "hami.register.bad_device",
    } <= codes
    assert inventory.model.key == "H100-80GB"


def test_parse_node_object_reads_a_decoded_node():
    labels = realworld.json_file("node-gfd-h100-mig-mixed.labels.json")
    node = {
        "metadata": {"name": "s4124-0073", "labels": labels, "annotations": None},
        "status": {"capacity": {"nvidia.com/mig-1g.10gb": "2", "cpu": "64"}, "allocatable": None},
    }
    inventory = parse_node_object(node=node)
    assert inventory.node_name == "s4124-0073"
    assert _units(inventory) == [
        (UnitKind.MIG_INSTANCE, "nvidia.com/mig-1g.10gb", 2, Fraction(1, 7), "1g.10gb")
    ]
    assert "cpu" not in inventory.capacity
    assert parse_node_object(node={}).units == ()
