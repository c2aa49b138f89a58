"""Shareable units (DESIGN §3/§4): the things a pod can be given, each with its GE and GPU model.

Units come in groups of identical units ("16 time-slicing replicas of GPU 2 at 1/4 GE each") rather
than one object per unit: a misconfigured node advertising 16,384 replicas (k8s-device-plugin#1433)
must not become 16,384 objects per GPU. `expand_units` yields one `ShareableUnit` per unit when a
caller needs rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction

from inventory.domain.mig_profiles import MigPlacement

__all__ = ["ShareableUnit", "ShareableUnitGroup", "UnitKind", "expand_units"]


class UnitKind(StrEnum):
    WHOLE_GPU = "whole_gpu"
    MIG_INSTANCE = "mig_instance"
    TIME_SLICE_REPLICA = "time_slice_replica"  # also a time-sliced MIG instance (mig_profile set)
    MPS_REPLICA = "mps_replica"
    # A HAMi-managed card: shares (gpumem/gpucores) are carved from it at schedule time, so the
    # inventory unit is the card itself with its split count; each pod's share gets its own GE.
    HAMI_GPU = "hami_gpu"


@dataclass(frozen=True, slots=True)
class ShareableUnitGroup:
    kind: UnitKind
    resource_name: str  # the extended resource a pod asks for: nvidia.com/gpu, nvidia.com/mig-3g.40gb
    count: int
    ge_each: Fraction
    model_key: str
    memory_mib: int | None = None  # memory of one unit where it is a hard partition (whole card, MIG)
    mig_profile: str | None = None
    placement: MigPlacement | None = None  # known from nvidia-smi/DRA, never from labels
    gpu_index: int | None = None  # which physical card, where the source says
    gpu_uuid: str | None = None
    split_count: int | None = None  # HAMi: how many shares the card may be split into

    @property
    def ge_total(self) -> Fraction:
        return self.ge_each * self.count


@dataclass(frozen=True, slots=True)
class ShareableUnit:
    kind: UnitKind
    resource_name: str
    ge: Fraction
    model_key: str
    ordinal: int  # position within its group
    memory_mib: int | None
    mig_profile: str | None
    placement: MigPlacement | None
    gpu_index: int | None
    gpu_uuid: str | None


def expand_units(group: ShareableUnitGroup) -> Iterator[ShareableUnit]:
    for ordinal in range(group.count):
        yield ShareableUnit(
            kind=group.kind,
            resource_name=group.resource_name,
            ge=group.ge_each,
            model_key=group.model_key,
            ordinal=ordinal,
            memory_mib=group.memory_mib,
            mig_profile=group.mig_profile,
            placement=group.placement,
            gpu_index=group.gpu_index,
            gpu_uuid=group.gpu_uuid,
        )
