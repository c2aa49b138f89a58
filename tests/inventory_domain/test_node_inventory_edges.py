"""Whole NodeGpuInventory results worked by hand (mutation survivors,
docs/mutation-survivors-node-inventory.md).

Every field is compared, so a parser that reads the wrong label, drops a map or names the wrong source is
caught along with the counts. The model is compared as (key, memory MiB, known)."""

import dataclasses
from decimal import Decimal
from fractions import Fraction

from inventory.domain.hami_node import HamiDevice, HamiNodeRegistration, RegisterEncoding
from inventory.domain.node_inventory import (
    CardBasis,
    MigDeviceLabels,
    MigStrategy,
    SharingStrategy,
    parse_node_gpu_inventory,
    parse_node_object,
)
from inventory.domain.shareable_units import ShareableUnitGroup, UnitKind
from tests.inventory_domain import realworld

GPU = "nvidia.com/gpu"
T4_REGISTER = "GPU-9a3603f4-f66e-d48b-11ea-13e327064cca,10,15360,100,NVIDIA-Tesla T4,0,true:"


def _fields(inventory):
    fields = {field.name: getattr(inventory, field.name) for field in dataclasses.fields(inventory)}
    model = fields.pop("model")
    fields["model"] = (model.key, model.memory_mib, model.known)
    return fields


def _sample(name):
    return next(doc for doc in realworld.yaml_docs("node-capacity-samples.yaml") if doc["name"] == name)


def _expected(**overrides):
    """A node with nothing on it; each test states what its node adds."""
    base = {
        "node_name": "",
        "model": ("UNKNOWN", 0, False),
        "product_label": None,
        "physical_gpu_count": None,
        "card_basis": CardBasis.UNKNOWN,
        "card_source": "",
        "gpu_memory_mib": None,
        "mig_capable": None,
        "mig_strategy": MigStrategy.NONE,
        "mig_config": None,
        "mig_config_state": None,
        "mig_devices": (),
        "sharing_strategy": SharingStrategy.NONE,
        "replicas": 1,
        "renamed": False,
        "capacity": {},
        "allocatable": {},
        "units": (),
        "hami": None,
        "issues": (),
    }
    assert set(overrides) <= set(base)
    return base | overrides


def test_a_decoded_time_sliced_t4_node_reads_name_labels_capacity_and_allocatable():
    doc = _sample("t4-timeslicing-renameByDefault-false")
    # cpu first: non-GPU resources are skipped, and the ones after them still read.
    node = {
        "metadata": {"name": "gpu-t4-0", "labels": doc["labels"], "annotations": {}},
        "status": {
            "capacity": {"cpu": "64", **doc["status"]["capacity"]},
            "allocatable": {"cpu": "63", **doc["status"]["allocatable"]},
        },
    }
    # gpu.count 4 (cards, no MIG) x gpu.replicas 4 = the 16 advertised: 4 cards of 4 replicas at 1/4 GE.
    assert _fields(parse_node_object(node=node)) == _expected(
        node_name="gpu-t4-0",
        model=("T4-16GB", 15360, True),
        product_label="Tesla-T4-SHARED",
        physical_gpu_count=4,
        card_basis=CardBasis.REPORTED,
        card_source="label nvidia.com/gpu.count",
        gpu_memory_mib=15360,
        mig_capable=False,  # no mig.capable label: the T4 cannot do MIG
        sharing_strategy=SharingStrategy.TIME_SLICING,  # no sharing-strategy label; replicas say so
        replicas=4,
        capacity={GPU: Decimal(16)},
        allocatable={GPU: Decimal(16)},
        units=tuple(
            ShareableUnitGroup(UnitKind.TIME_SLICE_REPLICA, GPU, 4, Fraction(1, 4), "T4-16GB", gpu_index=i)
            for i in range(4)
        ),
    )


def test_a_decoded_hami_node_reads_its_register_annotation():
    sections = realworld.describe_sections(_sample("hami-node-vgpu-split")["describe_text"])
    node = {
        "metadata": {
            "name": "hami-t4",
            "labels": {},
            "annotations": {"hami.io/node-nvidia-register": T4_REGISTER},
        },
        "status": {"capacity": sections["Capacity"], "allocatable": sections["Allocatable"]},
    }
    device = HamiDevice(
        "GPU-9a3603f4-f66e-d48b-11ea-13e327064cca", 10, 15360, 100, "NVIDIA-Tesla T4", 0, True
    )
    # nvidia.com/gpu 100 is 1 card x 100 split count; the register's one entry is the card.
    assert _fields(parse_node_object(node=node)) == _expected(
        node_name="hami-t4",
        model=("T4-16GB", 15360, True),
        physical_gpu_count=1,
        card_basis=CardBasis.REPORTED,
        card_source="annotation hami.io/node-nvidia-register",
        gpu_memory_mib=15360,
        mig_capable=False,
        sharing_strategy=SharingStrategy.HAMI,
        capacity={GPU: Decimal(100)},
        allocatable={GPU: Decimal(100)},
        units=(
            ShareableUnitGroup(
                UnitKind.HAMI_GPU,
                GPU,
                1,
                Fraction(1),
                "T4-16GB",
                15360,
                gpu_index=0,
                gpu_uuid="GPU-9a3603f4-f66e-d48b-11ea-13e327064cca",
                split_count=10,
            ),
        ),
        hami=HamiNodeRegistration((device,), RegisterEncoding.LEGACY, True, ()),
    )


def test_an_unknown_hami_card_keeps_the_memory_it_registered():
    doc = next(
        doc
        for doc in realworld.yaml_docs("hami-node-annotations.yaml")
        if doc["name"] == "legacy-9field-gtx1050-plus-score"
    )
    inventory = parse_node_gpu_inventory(labels={}, annotations=doc["annotations"])
    # The catalog has no GTX 1050: its 4096 MiB can only come from the register.
    assert _fields(inventory)["model"] == ("GEFORCE-GTX-1050", 4096, False)
    assert (inventory.gpu_memory_mib, inventory.physical_gpu_count) == (4096, 2)


def test_labels_only_single_strategy_time_slicing_node_is_one_card_of_14_replicas():
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb-SHARED",
        "nvidia.com/gpu.count": "7",
        "nvidia.com/gpu.memory": "9984",
        "nvidia.com/gpu.replicas": "2",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
        "nvidia.com/mig.strategy": "single",
        "nvidia.com/mig.config": "all-1g.10gb",
        "nvidia.com/mig.config.state": "success",
        "nvidia.com/mig.capable": "true",
    }
    # gpu.count 7 = MIG devices of all-1g.10gb = 1 H100; each is served twice: 14 units of (1/7)/2.
    assert _fields(parse_node_gpu_inventory(labels=labels)) == _expected(
        model=("H100-80GB", 81559, True),
        product_label="NVIDIA-H100-80GB-HBM3-MIG-1g.10gb-SHARED",
        physical_gpu_count=1,
        card_basis=CardBasis.INFERRED,
        card_source="7 x 1g.10gb / 7 per card (mig.config layout), 2 replicas each",
        gpu_memory_mib=81559,  # the card; 9984 is one MIG device
        mig_capable=True,
        mig_strategy=MigStrategy.SINGLE,
        mig_config="all-1g.10gb",
        mig_config_state="success",
        mig_devices=(MigDeviceLabels("1g.10gb", 7, 9984, 2, "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb-SHARED"),),
        sharing_strategy=SharingStrategy.TIME_SLICING,
        replicas=2,
        units=(
            ShareableUnitGroup(
                UnitKind.TIME_SLICE_REPLICA, GPU, 14, Fraction(1, 14), "H100-80GB", mig_profile="1g.10gb"
            ),
        ),
    )


def test_a_single_strategy_node_cut_short_has_no_devices_and_no_cards():
    # Product only (no gpu.count, no replicas, no mig.capable): 0 devices, not shared, MIG-capable by model.
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb",
        "nvidia.com/mig.strategy": "single",
    }
    assert _fields(parse_node_gpu_inventory(labels=labels)) == _expected(
        model=("H100-80GB", 81559, True),
        product_label="NVIDIA-H100-80GB-HBM3-MIG-1g.10gb",
        gpu_memory_mib=81559,
        mig_capable=True,
        mig_strategy=MigStrategy.SINGLE,
        mig_devices=(MigDeviceLabels("1g.10gb", 0, None, 1, "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"),),
    )


def test_a_mig_product_label_without_a_strategy_label_means_single():
    labels = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb", "nvidia.com/gpu.count": "7"}
    inventory = parse_node_gpu_inventory(labels=labels)
    assert (inventory.mig_strategy, inventory.physical_gpu_count) == (MigStrategy.SINGLE, 1)


def test_the_mixed_capture_keeps_every_profiles_count_memory_replicas_and_product():
    labels = realworld.json_file("node-gfd-h100-mig-mixed.labels.json")
    inventory = parse_node_gpu_inventory(labels=labels)
    assert inventory.mig_devices == (
        MigDeviceLabels("1g.10gb", 2, 9984, 1, "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"),
        MigDeviceLabels("2g.20gb", 1, 20096, 1, "NVIDIA-H100-80GB-HBM3-MIG-2g.20gb"),
        MigDeviceLabels("3g.40gb", 1, 40320, 1, "NVIDIA-H100-80GB-HBM3-MIG-3g.40gb"),
    )
    assert (inventory.product_label, inventory.node_name) == ("NVIDIA-H100-80GB-HBM3", "")


def test_a_mixed_profile_without_a_count_label_has_no_devices():
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": "1",
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig-3g.40gb.memory": "40320",
    }
    inventory = parse_node_gpu_inventory(labels=labels)
    assert inventory.mig_devices == (MigDeviceLabels("3g.40gb", 0, 40320, 1, None),)
    assert inventory.units == ()


def test_labels_only_with_no_product_is_an_unknown_card_of_the_labelled_memory():
    labels = {"nvidia.com/gpu.count": "2", "nvidia.com/gpu.memory": "16384"}
    assert _fields(parse_node_gpu_inventory(labels=labels)) == _expected(
        model=("UNKNOWN", 16384, False),
        physical_gpu_count=2,
        card_basis=CardBasis.REPORTED,
        card_source="label nvidia.com/gpu.count",
        gpu_memory_mib=16384,
        units=tuple(
            ShareableUnitGroup(UnitKind.WHOLE_GPU, GPU, 1, Fraction(1), "UNKNOWN", 16384, gpu_index=i)
            for i in (0, 1)
        ),
    )


def test_an_uncatalogued_product_takes_its_memory_from_the_label():
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",
        "nvidia.com/gpu.count": "1",
        "nvidia.com/gpu.memory": "97887",
    }
    key = "RTX-PRO-6000-BLACKWELL-SERVER-EDITION"
    assert _fields(parse_node_gpu_inventory(labels=labels)) == _expected(
        model=(key, 97887, False),
        product_label="NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",
        physical_gpu_count=1,
        card_basis=CardBasis.REPORTED,
        card_source="label nvidia.com/gpu.count",
        gpu_memory_mib=97887,
        units=(ShareableUnitGroup(UnitKind.WHOLE_GPU, GPU, 1, Fraction(1), key, 97887, gpu_index=0),),
    )


def test_renamed_mig_replicas_are_read_as_shared_and_counted_per_instance():
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/gpu.replicas": "2",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
    }
    # renameByDefault: mig-1g.5gb.shared 14 = 7 instances x 2 replicas; 7 x 1g.5gb fill one A100 40GB.
    inventory = parse_node_gpu_inventory(labels=labels, allocatable={"nvidia.com/mig-1g.5gb.shared": "14"})
    assert inventory.renamed is True
    assert (inventory.physical_gpu_count, inventory.card_basis, inventory.card_source) == (
        1,
        CardBasis.INFERRED,
        "MIG instances fit on 1 cards",
    )
    assert inventory.units == (
        ShareableUnitGroup(
            UnitKind.TIME_SLICE_REPLICA,
            "nvidia.com/mig-1g.5gb.shared",
            14,
            Fraction(1, 14),
            "A100-40GB",
            mig_profile="1g.5gb",
        ),
    )
    assert inventory.allocatable == {"nvidia.com/mig-1g.5gb.shared": Decimal(14)}
    assert inventory.issues == ()


def test_two_replicas_without_a_sharing_label_are_time_slicing():
    labels = {
        "nvidia.com/gpu.product": "Tesla-T4",
        "nvidia.com/gpu.count": "1",
        "nvidia.com/gpu.replicas": "2",
    }
    inventory = parse_node_gpu_inventory(labels=labels, capacity={GPU: "2"})
    assert inventory.sharing_strategy is SharingStrategy.TIME_SLICING
    assert inventory.units == (
        ShareableUnitGroup(UnitKind.TIME_SLICE_REPLICA, GPU, 2, Fraction(1, 2), "T4-16GB", gpu_index=0),
    )
