"""Fragmentation with hand-worked examples. Memory slots are numbered 0..7 left to right; an A100/H100
has 7 compute slices and 8 memory slices; placements are from `nvidia-smi mig -lgipp`."""

from fractions import Fraction

import pytest

from inventory.domain.gpu_models import resolve_gpu_model
from inventory.fragmentation import (
    WHOLE_GPU,
    GpuGeometry,
    PlacedInstance,
    ProfileDemand,
    analyze_cluster_fragmentation,
    analyze_gpu_fragmentation,
    analyze_gpu_placement,
    analyze_node_fragmentation,
    analyze_pool_fragmentation,
    internal_fragmentation,
    smallest_fitting_profile,
    sum_internal_waste,
)
from tests.inventory_domain import realworld

A100 = resolve_gpu_model(product="A100-SXM4-40GB")
H100 = resolve_gpu_model(product="NVIDIA-H100-80GB-HBM3")
T4 = resolve_gpu_model(product="Tesla-T4")


def _a100_3g_at_0_2g_at_4(**kwargs):
    return GpuGeometry(
        "a100-0", A100, instances=(PlacedInstance("3g.20gb", 0), PlacedInstance("2g.10gb", 4)), **kwargs
    )


def test_what_fits_on_an_a100_with_3g_at_slot_0_and_2g_at_slot_4():
    # 3g.20gb holds slots 0-3 and 3 compute slices; 2g.10gb holds slots 4-5 and 2: 2 slots (6, 7) and
    # 2 compute slices are left. 1g.5gb (starts 0..6) fits at 6; its +me twin too; 1g.10gb (starts
    # 0,2,4,6, size 2) fits at 6 covering 6-7. 2g.10gb may only start at 0, 2 or 4: all taken, so it
    # does not fit although 2 slots and 2 compute slices are free. Nothing bigger fits.
    report = analyze_gpu_placement(gpu=_a100_3g_at_0_2g_at_4())
    assert (report.free_memory_slices, report.free_compute_slices) == (2, 2)
    assert [(p.profile, p.starts) for p in report.placeable] == [
        ("1g.5gb", (6,)),
        ("1g.5gb+me", (6,)),
        ("1g.10gb", (6,)),
    ]
    # largest by GE: 1g.10gb is max(1/7, 2/8) = 1/4 > 1g.5gb's 1/7
    assert report.largest_placeable == "1g.10gb"


def test_the_2g_demand_on_that_card_is_combinational_fragmentation():
    # Demand 2g.10gb: the 2 free slots and 2 compute slices cannot form it (start 6 not allowed):
    # everything free is stranded, GE max(2/7, 2/8) = 2/7.
    report = analyze_gpu_fragmentation(gpu=_a100_3g_at_0_2g_at_4(), demand=["2g.10gb"])
    assert (report.stranded_compute_slices, report.stranded_memory_slices) == (2, 2)
    assert (report.free_ge, report.usable_ge, report.stranded_ge) == (Fraction(2, 7), 0, Fraction(2, 7))


def test_a_1g_demand_leaves_slot_7_stranded():
    # Demand 1g.5gb: best packing is 1g.5gb at 6 (only one: 1g starts stop at 6). Slot 7 and the
    # last compute slice stay stranded: 1 compute + 1 memory slice = max(1/7, 1/8) = 1/7.
    report = analyze_gpu_fragmentation(gpu=_a100_3g_at_0_2g_at_4(), demand=["1g.5gb"])
    assert report.best_packing == (("1g.5gb", 6),)
    assert (report.stranded_compute_slices, report.stranded_memory_slices, report.stranded_ge) == (
        1,
        1,
        Fraction(1, 7),
    )
    # Demand 1g.10gb as well: it takes slots 6-7 with one compute slice; one compute slice is left
    # with no memory: stranded compute 1, memory 0, GE 1/7.
    report = analyze_gpu_fragmentation(gpu=_a100_3g_at_0_2g_at_4(), demand=["1g.5gb", "1g.10gb"])
    assert report.best_packing == (("1g.10gb", 6),)
    assert (report.stranded_compute_slices, report.stranded_memory_slices) == (1, 0)


def test_seven_1g_instances_strand_memory_slot_7_for_ever():
    # mig-profiles.md: "a GPU placed with 1g at {0..6} leaves memory slot 7 usable only by 1g.20gb
    # at start 6 or by the 7g profile". With all seven busy, compute is exhausted too.
    gpu = GpuGeometry("h100", H100, instances=tuple(PlacedInstance("1g.10gb", s) for s in range(7)))
    report = analyze_gpu_placement(gpu=gpu)
    assert (report.free_memory_slices, report.free_compute_slices, report.placeable) == (1, 0, ())
    frag = analyze_gpu_fragmentation(gpu=gpu, demand=["1g.10gb"])
    assert (frag.stranded_memory_slices, frag.stranded_ge) == (1, Fraction(1, 8))


def test_fragmented_lgi_capture_from_dra_driver_issue_933():
    # GPU 3 of that capture: 1g.10gb at 0, 1 and 5. Free: slots 2,3,4,6,7, compute 4.
    # 2g.20gb can start at 2 (2-3) but not 4 (5 taken) -> one; 3g.40gb needs 0 or 4 with 4 slots: no.
    rows = next(rows for title, rows in realworld.lgi_blocks().items() if "933" in title)
    gpu = GpuGeometry("gpu3", H100, instances=tuple(PlacedInstance(r["name"], r["start"]) for r in rows))
    report = analyze_gpu_placement(gpu=gpu)
    placeable = {p.profile: p.starts for p in report.placeable}
    assert placeable["2g.20gb"] == (2,)
    assert placeable["1g.20gb"] == (2, 6)
    assert "3g.40gb" not in placeable
    assert "4g.40gb" not in placeable
    # demand 3g.40gb: nothing can be packed; all 4 compute + 5 memory slices stranded = 5/8
    frag = analyze_gpu_fragmentation(gpu=gpu, demand=["3g.40gb"])
    assert frag.stranded_ge == Fraction(5, 8)


def test_every_lgi_capture_is_a_valid_geometry():
    for title, rows in realworld.lgi_blocks().items():
        model = A100 if "A100-40GB" in title else H100
        for index in {r["gpu"] for r in rows}:
            instances = tuple(PlacedInstance(r["name"], r["start"]) for r in rows if r["gpu"] == index)
            report = analyze_gpu_placement(gpu=GpuGeometry(f"{index}", model, instances=instances))
            assert report.issues == (), title
            assert report.free_compute_slices >= 0


def test_impossible_geometries_are_reported_not_raised():
    gpu = GpuGeometry(
        "bad",
        A100,
        instances=(
            PlacedInstance("3g.20gb", 2),
            PlacedInstance("2g.10gb", 0),
            PlacedInstance("2g.10gb", 0),
            PlacedInstance("9g.1gb", 0),
        ),
    )
    codes = [issue.code for issue in analyze_gpu_placement(gpu=gpu).issues]
    assert codes == ["mig.geometry.bad_start", "mig.geometry.overlap", "mig.geometry.unknown_profile"]


def test_idle_instances_of_the_wrong_shape_are_stranded_unless_reconfigurable():
    # Static all-balanced-like card: 3g busy at 0, idle 2g at 4 and idle 1g at 6. Demand 1g.5gb:
    # the idle 1g is usable as is; the idle 2g (2 compute, 2 memory) is stranded until mig-parted
    # changes the geometry, and so is slot 7 with the 7th compute slice (no 1g may start at 7):
    # 3 compute + 3 memory slices = max(3/7, 3/8) = 3/7.
    # Reconfigurable: the idle instances may go; 1g at 4, 5 and 6 use 3 of the 4 free compute
    # slices; slot 7 and one compute slice stay stranded: 1/7.
    instances = (
        PlacedInstance("3g.20gb", 0),
        PlacedInstance("2g.10gb", 4, in_use=False),
        PlacedInstance("1g.5gb", 6, in_use=False),
    )
    static = analyze_gpu_fragmentation(gpu=GpuGeometry("s", A100, instances=instances), demand=["1g.5gb"])
    assert (static.stranded_compute_slices, static.stranded_memory_slices, static.stranded_ge) == (
        3,
        3,
        Fraction(3, 7),
    )
    dynamic = analyze_gpu_fragmentation(
        gpu=GpuGeometry("d", A100, instances=instances, reconfigurable=True), demand=["1g.5gb"]
    )
    assert dynamic.best_packing == (("1g.5gb", 4), ("1g.5gb", 5), ("1g.5gb", 6))
    assert (dynamic.stranded_compute_slices, dynamic.stranded_memory_slices, dynamic.stranded_ge) == (
        1,
        1,
        Fraction(1, 7),
    )


def test_static_free_memory_counts_idle_instances_and_slot_7():
    # In the static case above, free = idle 2g (2c, 2m) + idle 1g (1c, 1m) + unpartitioned slot 7
    # (1 memory, the 7th compute slice) = 4 compute, 4 memory -> free GE max(4/7, 4/8) = 4/7.
    instances = (
        PlacedInstance("3g.20gb", 0),
        PlacedInstance("2g.10gb", 4, in_use=False),
        PlacedInstance("1g.5gb", 6, in_use=False),
    )
    report = analyze_gpu_fragmentation(gpu=GpuGeometry("s", A100, instances=instances), demand=["1g.5gb"])
    assert (report.free_compute_slices, report.free_memory_slices, report.free_ge) == (4, 4, Fraction(4, 7))
    assert report.usable_ge + report.stranded_ge == report.free_ge


def test_no_demand_means_nothing_is_stranded():
    report = analyze_gpu_fragmentation(gpu=_a100_3g_at_0_2g_at_4(), demand=[])
    assert report.stranded_ge == 0
    assert report.usable_ge == report.free_ge


def test_whole_cards_are_free_for_whole_gpu_demand_only():
    free_t4 = GpuGeometry("t4", T4, mig_enabled=False)
    assert analyze_gpu_fragmentation(gpu=free_t4, demand=[WHOLE_GPU]).stranded_ge == 0
    assert analyze_gpu_fragmentation(gpu=free_t4, demand=["1g.5gb"]).stranded_ge == 1
    busy = GpuGeometry("t4", T4, mig_enabled=False, in_use=True)
    assert analyze_gpu_fragmentation(gpu=busy, demand=[WHOLE_GPU]).free_ge == 0


def test_node_and_pool_totals_are_per_model():
    node = [_a100_3g_at_0_2g_at_4(), GpuGeometry("t4", T4, mig_enabled=False)]
    report = analyze_node_fragmentation(node_name="n1", gpus=node, demand=["2g.10gb"])
    assert report.by_model["A100-40GB"].stranded_ge == Fraction(2, 7)
    assert report.by_model["T4-16GB"].stranded_ge == 1
    pool = analyze_pool_fragmentation(
        pool_name="p", nodes={"n1": node, "n2": node}, demand=["2g.10gb"], keep_nodes=True
    )
    assert (pool.node_count, pool.gpu_count, pool.stranded_gpu_count) == (2, 4, 4)
    assert pool.by_model["A100-40GB"].stranded_ge == Fraction(4, 7)
    assert len(pool.nodes) == 2


def test_cluster_geometry_mismatch_between_pools():
    # Pool "small" is all 1g.5gb (7 per card, 6 busy, 1 idle each); pool "big" has empty MIG cards.
    # Pending: 2 x 3g.20gb on A100 and 3 x 1g.5gb.
    # - 3g.20gb: small can place none (its idle 1g slots are fixed); big places 2 per empty card.
    # - 1g.5gb: small has one idle instance per card; big could create 7 per card.
    small = [
        GpuGeometry(
            f"s{i}", A100, instances=tuple(PlacedInstance("1g.5gb", s, in_use=s < 6) for s in range(7))
        )
        for i in range(2)
    ]
    big = [GpuGeometry("b0", A100)]
    report = analyze_cluster_fragmentation(
        pools={"small": small, "big": big},
        demands=[ProfileDemand("3g.20gb", 4, "A100-40GB"), ProfileDemand("1g.5gb", 3)],
    )
    three_g, one_g = report.demands
    assert dict(three_g.placeable_by_pool) == {"small": 0, "big": 2}
    assert (three_g.unmet, three_g.unmet_ge) == (2, Fraction(1))  # 2 x 1/2 GE waits
    assert dict(one_g.placeable_by_pool) == {"small": 2, "big": 7}
    assert one_g.unmet == 0
    # small's free capacity per card: the idle 1g plus slot 7 -> 1 compute, 2 memory = 1/4 each
    assert report.free_ge_by_model["A100-40GB"] == Fraction(1, 4) * 2 + 1
    assert report.unmet_ge_by_model == {"A100-40GB": 1}
    # the stranded slot 7 of each small card (1/8) can serve neither demand
    assert report.unfit_free_ge_by_model["A100-40GB"] == Fraction(1, 4)
    assert report.geometry_mismatch


def test_whole_gpu_demand_across_pools():
    report = analyze_cluster_fragmentation(
        pools={"t4": [GpuGeometry("t", T4, mig_enabled=False)], "mig": [GpuGeometry("m", A100)]},
        demands=[ProfileDemand(WHOLE_GPU, 2)],
    )
    (fit,) = report.demands
    assert (fit.placeable_total, fit.unmet, fit.unmet_ge) == (1, 1, 1)
    assert report.unfit_free_ge_by_model["A100-40GB"] == 1
    assert report.geometry_mismatch


@pytest.mark.parametrize(
    ("model", "asked", "profile", "granted", "wasted", "wasted_ge"),
    [
        # the seed's example: asked 9 GB, got a 10 GB slice. H100 1g.10gb gives 9984 MiB; 9216 asked.
        (H100, 9 * 1024, "1g.10gb", 9984, 768, Fraction(1, 7) * Fraction(768, 9984)),
        # A100 40GB: 6 GB does not fit 1g.5gb (4864) -> 1g.10gb (9856, GE 1/4), 3712 MiB wasted
        (A100, 6 * 1024, "1g.10gb", 9856, 3712, Fraction(1, 4) * Fraction(3712, 9856)),
        # exactly a 3g.40gb's 40320 MiB: no waste
        (H100, 40320, "3g.40gb", 40320, 0, Fraction(0)),
    ],
)
def test_internal_fragmentation(model, asked, profile, granted, wasted, wasted_ge):
    result = internal_fragmentation(model=model, requested_memory_mib=asked)
    assert (result.profile, result.granted_memory_mib, result.wasted_memory_mib, result.wasted_ge) == (
        profile,
        granted,
        wasted,
        wasted_ge,
    )


def test_internal_fragmentation_edges():
    assert internal_fragmentation(model=A100, requested_memory_mib=50000).profile is None
    assert internal_fragmentation(model=T4, requested_memory_mib=1).profile is None
    granted = internal_fragmentation(model=H100, requested_memory_mib=9216, granted_profile="2g.20gb")
    assert granted.wasted_memory_mib == 20096 - 9216
    assert smallest_fitting_profile(model=H100, memory_mib=1, compute_slices=3).name == "3g.40gb"
    assert smallest_fitting_profile(model=H100, memory_mib=1, media_extensions=True).name == "1g.10gb+me"
    totals = sum_internal_waste(
        items=[granted, internal_fragmentation(model=H100, requested_memory_mib=9216)]
    )
    assert totals["H100-80GB"][0] == 20096 - 9216 + 768
