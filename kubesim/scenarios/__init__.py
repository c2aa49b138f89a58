"""GPU cluster scenarios for kubesim: nodes, DRA slices, claims and pods built from real object shapes.

from kubesim.scenarios import build, NAMES
scenario = build("mixed", nodes=50, seed=7)
store.bulk_load(scenario.objects)
scenario.truth.gpus_by_model  # what an inventory sync must find
"""

from kubesim.scenarios.builder import (
    DEFAULT_CLAIMS_PER_NODE,
    DEFAULT_GPUS_PER_NODE,
    DEFAULT_PODS_PER_NODE,
    NAMES,
    Scenario,
    build,
)
from kubesim.scenarios.truth import Allocation, DraPoolTruth, HamiDevice, NodeTruth, Truth

__all__ = [
    "DEFAULT_CLAIMS_PER_NODE",
    "DEFAULT_GPUS_PER_NODE",
    "DEFAULT_PODS_PER_NODE",
    "NAMES",
    "Allocation",
    "DraPoolTruth",
    "HamiDevice",
    "NodeTruth",
    "Scenario",
    "Truth",
    "build",
]
