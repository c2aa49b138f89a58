"""Unit groups from advertised resources at their edges, worked by hand (mutation survivors,
docs/mutation-survivors-inventory.md): whole groups are compared, so model, memory, card index, GE and
the issues an operator reads are pinned along with the counts."""

from decimal import Decimal
from fractions import Fraction

from inventory.domain.gpu_models import resolve_gpu_model
from inventory.domain.hami_node import HamiDevice, HamiNodeRegistration, RegisterEncoding
from inventory.domain.issues import ParseIssue, warning
from inventory.domain.node_units import MigDeviceLabels, MigStrategy, NodeUnitBuilder, SharingStrategy
from inventory.domain.shareable_units import ShareableUnitGroup, UnitKind

H100 = resolve_gpu_model(product="NVIDIA-H100-80GB-HBM3")
GPU = "nvidia.com/gpu"


def _build(
    *, advertised, replicas=1, sharing=SharingStrategy.NONE, physical=None, label=None, model=H100, **kw
):
    issues: list[ParseIssue] = []
    builder = NodeUnitBuilder(
        issues=issues,
        model=model,
        replicas=replicas,
        sharing=sharing,
        physical=physical,
        gpu_count_label=label,
    )
    groups = builder.build(
        advertised=advertised,
        hami=kw.get("hami"),
        mig_strategy=kw.get("mig_strategy", MigStrategy.NONE),
        mig_devices=kw.get("mig_devices", ()),
    )
    return list(groups), issues


def test_hami_cards_keep_their_registered_index_or_else_their_position():
    devices = tuple(
        HamiDevice(uuid, 10, 40960, 100, "NVIDIA-NVIDIA A100-PCIE-40GB", 0, True, index=index)
        for uuid, index in (("GPU-aaa", 3), ("GPU-bbb", None))
    )
    hami = HamiNodeRegistration(devices, RegisterEncoding.JSON, True, ())
    groups, _ = _build(advertised={}, hami=hami)
    assert groups == [
        ShareableUnitGroup(
            UnitKind.HAMI_GPU,
            GPU,
            1,
            Fraction(1),
            "A100-40GB",
            40960,
            gpu_index=3,
            gpu_uuid="GPU-aaa",
            split_count=10,
        ),
        # No index registered: its position (1) in the annotation
        ShareableUnitGroup(
            UnitKind.HAMI_GPU,
            GPU,
            1,
            Fraction(1),
            "A100-40GB",
            40960,
            gpu_index=1,
            gpu_uuid="GPU-bbb",
            split_count=10,
        ),
    ]


def test_labels_only_time_slicing_advertises_cards_times_replicas():
    # gpu.count 2, replicas 4, no allocatable: 2 x 4 = 8 replicas, 4 per card at 1/4 GE.
    groups, issues = _build(
        advertised={}, replicas=4, sharing=SharingStrategy.TIME_SLICING, physical=2, label=2
    )
    assert groups == [
        ShareableUnitGroup(UnitKind.TIME_SLICE_REPLICA, GPU, 4, Fraction(1, 4), "H100-80GB", gpu_index=i)
        for i in (0, 1)
    ]
    assert issues == []


def test_whole_cards_carry_the_model_memory_and_their_index():
    groups, _ = _build(advertised={GPU: Decimal(2)})
    assert groups == [
        ShareableUnitGroup(UnitKind.WHOLE_GPU, GPU, 1, Fraction(1), "H100-80GB", 81559, gpu_index=i)
        for i in (0, 1)
    ]


def test_a_replicas_label_without_a_sharing_strategy_still_splits_cards():
    # replicas 2, sharing none: 4 advertised on 2 cards = 2 cards x 2 replicas at 1/2 GE.
    groups, _ = _build(advertised={GPU: Decimal(4)}, replicas=2, physical=2)
    assert groups == [
        ShareableUnitGroup(UnitKind.TIME_SLICE_REPLICA, GPU, 2, Fraction(1, 2), "H100-80GB", gpu_index=i)
        for i in (0, 1)
    ]


def test_replicas_that_do_not_match_the_cards_are_one_group_and_flagged():
    # 7 advertised, labels say 2 cards x 4 replicas = 8: one group of 7 at 1/4 GE, and a warning.
    groups, issues = _build(advertised={GPU: Decimal(7)}, replicas=4, sharing=SharingStrategy.MPS, physical=2)
    assert groups == [ShareableUnitGroup(UnitKind.MPS_REPLICA, GPU, 7, Fraction(1, 4), "H100-80GB")]
    assert issues == [
        warning(
            "node.capacity_mismatch",
            "nvidia.com/gpu=7, labels say 2 cards x 4 replicas",
            source="resource nvidia.com/gpu",
        )
    ]
    # Without a card count there is nothing to contradict: no warning.
    _, issues = _build(advertised={GPU: Decimal(7)}, replicas=4, sharing=SharingStrategy.MPS, physical=None)
    assert issues == []


def test_single_strategy_replicas_keep_the_advertised_count_even_when_uneven():
    # all-1g.10gb, 2 replicas, 15 advertised (not a multiple of 2): 15 units of (1/7)/2 = 1/14 GE.
    single = (MigDeviceLabels("1g.10gb", 7, 9984, 2, None),)
    groups, _ = _build(
        advertised={GPU: Decimal(15)},
        replicas=2,
        sharing=SharingStrategy.TIME_SLICING,
        mig_strategy=MigStrategy.SINGLE,
        mig_devices=single,
    )
    assert groups == [
        ShareableUnitGroup(
            UnitKind.TIME_SLICE_REPLICA, GPU, 15, Fraction(1, 14), "H100-80GB", mig_profile="1g.10gb"
        )
    ]


def test_mixed_resources_shared_ones_are_replicas_plain_ones_instances():
    # replicas 3: mig-1g.10gb.shared 10 -> 10 replicas of (1/7)/3 = 1/21 GE; mig-3g.40gb 2 -> 2 instances
    # of 1/2 GE with their 40320 MiB; an unknown nvidia.com resource is flagged.
    groups, issues = _build(
        advertised={
            "nvidia.com/mig-1g.10gb.shared": Decimal(10),
            "nvidia.com/mig-3g.40gb": Decimal(2),
            "nvidia.com/gpu-foo": Decimal(1),
        },
        replicas=3,
        sharing=SharingStrategy.TIME_SLICING,
        mig_strategy=MigStrategy.MIXED,
    )
    assert groups == [
        ShareableUnitGroup(
            UnitKind.TIME_SLICE_REPLICA,
            "nvidia.com/mig-1g.10gb.shared",
            10,
            Fraction(1, 21),
            "H100-80GB",
            mig_profile="1g.10gb",
        ),
        ShareableUnitGroup(
            UnitKind.MIG_INSTANCE,
            "nvidia.com/mig-3g.40gb",
            2,
            Fraction(1, 2),
            "H100-80GB",
            40320,
            mig_profile="3g.40gb",
        ),
    ]
    assert issues == [
        warning(
            "node.unknown_gpu_resource",
            "no unit kind for nvidia.com/gpu-foo",
            source="resource nvidia.com/gpu-foo",
        )
    ]


def test_shared_mig_instances_under_mps_are_mps_replicas():
    groups, _ = _build(
        advertised={"nvidia.com/mig-1g.10gb.shared": Decimal(2)}, replicas=2, sharing=SharingStrategy.MPS
    )
    assert [(g.kind, g.count, g.ge_each) for g in groups] == [(UnitKind.MPS_REPLICA, 2, Fraction(1, 14))]


def test_labels_only_mixed_profiles_with_no_devices_give_no_group():
    devices = (MigDeviceLabels("1g.10gb", 0, 9984, 1, None), MigDeviceLabels("3g.40gb", 1, 40320, 1, None))
    groups, _ = _build(advertised={}, mig_strategy=MigStrategy.MIXED, mig_devices=devices)
    assert groups == [
        ShareableUnitGroup(
            UnitKind.MIG_INSTANCE,
            "nvidia.com/mig-3g.40gb",
            1,
            Fraction(1, 2),
            "H100-80GB",
            40320,
            mig_profile="3g.40gb",
        )
    ]


def test_an_unknown_cards_oversized_profile_is_estimated_as_at_most_one_card():
    # GH200 is not in the catalog: "8g.96gb" is read on the 7/8 geometry, capped at 7 compute and
    # 8 memory slices -> max(7/7, 8/8) = 1 GE, with both warnings.
    gh200 = resolve_gpu_model(product="NVIDIA GH200 96GB HBM3", memory_mib=97871)
    groups, issues = _build(advertised={"nvidia.com/mig-8g.96gb": Decimal(1)}, model=gh200)
    assert [(g.count, g.ge_each, g.memory_mib) for g in groups] == [(1, Fraction(1), None)]
    assert [issue.code for issue in issues] == ["mig.profile_unknown", "mig.ge_estimated"]
    assert issues[1] == warning(
        "mig.ge_estimated", "GE of 8g.96gb on GH200-96GB-HBM3 estimated from its name", source="8g.96gb"
    )


def test_labels_only_single_strategy_time_slicing_serves_each_mig_device_replicas_times():
    # GFD under the single strategy labels gpu.count = MIG devices (7 x 1g.10gb on one H100) and
    # gpu.replicas = 2; the plugin serves 7 x 2 = 14 replicas of (1/7)/2 = 1/14 GE: the card's 1 GE.
    single = (MigDeviceLabels("1g.10gb", 7, 9984, 2, "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb-SHARED"),)
    groups, issues = _build(
        advertised={},
        replicas=2,
        sharing=SharingStrategy.TIME_SLICING,
        physical=1,
        label=7,
        mig_strategy=MigStrategy.SINGLE,
        mig_devices=single,
    )
    assert groups == [
        ShareableUnitGroup(
            UnitKind.TIME_SLICE_REPLICA, GPU, 14, Fraction(1, 14), "H100-80GB", mig_profile="1g.10gb"
        )
    ]
    assert sum(group.ge_total for group in groups) == 1
    assert issues == []
