"""Pure MIG fragmentation analysis (DESIGN §2): internal, combinational and cluster fragmentation.

No Django. Input: `GpuGeometry` per card (model, existing instances with placements, busy or idle);
output: dataclasses with native slice counts and exact GE (`fractions.Fraction`).
"""

from inventory.fragmentation.cluster import (
    ClusterFragmentation,
    DemandFit,
    ProfileDemand,
    analyze_cluster_fragmentation,
)
from inventory.fragmentation.combinational import (
    WHOLE_GPU,
    FragmentationTotals,
    GpuFragmentation,
    NodeFragmentation,
    PoolFragmentation,
    analyze_gpu_fragmentation,
    analyze_node_fragmentation,
    analyze_pool_fragmentation,
)
from inventory.fragmentation.geometry import (
    GpuGeometry,
    GpuPlacementReport,
    PlaceableProfile,
    PlacedInstance,
    analyze_gpu_placement,
)
from inventory.fragmentation.internal import (
    InternalFragmentation,
    internal_fragmentation,
    smallest_fitting_profile,
    sum_internal_waste,
)

__all__ = [
    "WHOLE_GPU",
    "ClusterFragmentation",
    "DemandFit",
    "FragmentationTotals",
    "GpuFragmentation",
    "GpuGeometry",
    "GpuPlacementReport",
    "InternalFragmentation",
    "NodeFragmentation",
    "PlaceableProfile",
    "PlacedInstance",
    "PoolFragmentation",
    "ProfileDemand",
    "analyze_cluster_fragmentation",
    "analyze_gpu_fragmentation",
    "analyze_gpu_placement",
    "analyze_node_fragmentation",
    "analyze_pool_fragmentation",
    "internal_fragmentation",
    "smallest_fitting_profile",
    "sum_internal_waste",
]
