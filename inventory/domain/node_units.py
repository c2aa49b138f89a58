"""Shareable unit groups of one node, from its advertised extended resources (or labels alone).

Split from node_inventory.py: that module reads labels, this one decides what each resource name means.
`nvidia.com/gpu` is a whole card, a MIG device (single strategy) or a replica (time-slicing/MPS);
`nvidia.com/mig-<profile>` a MIG device, `.shared` when renamed; HAMi pools (gpumem, gpucores) are not units.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction

from inventory.domain.gpu_equivalent import WHOLE_GPU_GE, mig_ge, replica_ge
from inventory.domain.gpu_models import GpuModel, resolve_gpu_model, resolve_mig_profile
from inventory.domain.hami_node import HamiDevice, HamiNodeRegistration
from inventory.domain.issues import ParseIssue, warning
from inventory.domain.mig_profiles import parse_profile_name
from inventory.domain.shareable_units import ShareableUnitGroup, UnitKind

__all__ = [
    "GPU_RESOURCE",
    "HAMI_POOL_RESOURCES",
    "MIG_LABEL_RE",
    "MIG_RESOURCE_RE",
    "SHARED_GPU_RESOURCE",
    "MigDeviceLabels",
    "MigStrategy",
    "NodeUnitBuilder",
    "SharingStrategy",
]

GPU_RESOURCE = "nvidia.com/gpu"
SHARED_GPU_RESOURCE = "nvidia.com/gpu.shared"
# HAMi's per-node pools (not units: shares are carved from the cards at schedule time).
HAMI_POOL_RESOURCES = frozenset(
    {"nvidia.com/gpumem", "nvidia.com/gpucores", "nvidia.com/gpumem-percentage", "nvidia.com/priority"}
)
PROFILE_PATTERN = r"\d+g\.\d+gb(?:[+-][a-z]+(?:\.all)?)?"
MIG_LABEL_RE = re.compile(rf"^nvidia\.com/mig-(?P<profile>{PROFILE_PATTERN})\.(?P<field>[a-z.-]+)$")
MIG_RESOURCE_RE = re.compile(rf"^nvidia\.com/mig-(?P<profile>{PROFILE_PATTERN})(?P<shared>\.shared)?$")
# Memory slices by compute slices on the common 7/8 geometry: only for profiles of unknown cards.
_ESTIMATED_MEMORY_SLICES = {1: 1, 2: 2, 3: 4, 4: 4, 7: 8}


class MigStrategy(StrEnum):
    NONE = "none"
    SINGLE = "single"
    MIXED = "mixed"


class SharingStrategy(StrEnum):
    NONE = "none"
    TIME_SLICING = "time-slicing"
    MPS = "mps"
    HAMI = "hami"


@dataclass(frozen=True, slots=True)
class MigDeviceLabels:
    profile: str
    count: int  # MIG devices on the node (all cards together)
    memory_mib: int | None
    replicas: int
    product: str | None


class NodeUnitBuilder:
    """Turns advertised resources (or labels alone) into unit groups; problems go to `issues`."""

    def __init__(
        self,
        *,
        issues: list[ParseIssue],
        model: GpuModel,
        replicas: int,
        sharing: SharingStrategy,
        physical: int | None,
        gpu_count_label: int | None,
    ) -> None:
        self.issues, self.model, self.replicas, self.sharing = issues, model, replicas, sharing
        self.physical, self.gpu_count_label = physical, gpu_count_label

    def build(
        self,
        *,
        advertised: Mapping[str, Decimal],
        hami: HamiNodeRegistration | None,
        mig_strategy: MigStrategy,
        mig_devices: tuple[MigDeviceLabels, ...],
    ) -> tuple[ShareableUnitGroup, ...]:
        if hami is not None and hami.devices:
            return tuple(self._hami_card(position, device) for position, device in enumerate(hami.devices))
        single_profile = (
            mig_devices[0].profile if mig_strategy is MigStrategy.SINGLE and mig_devices else None
        )
        if not advertised:  # labels only
            if mig_strategy is MigStrategy.MIXED:
                return tuple(
                    group
                    for device in mig_devices
                    for group in self._mig(
                        f"nvidia.com/mig-{device.profile}", device.profile, device.count, device.replicas
                    )
                )
            # GFD's gpu.count is cards (none) or MIG devices (single), never replicas; the plugin
            # serves each of them `replicas` times either way.
            count = (self.gpu_count_label or 0) * self.replicas
            advertised = {GPU_RESOURCE: Decimal(count)} if count else {}
        replicas_by_profile = {device.profile: device.replicas for device in mig_devices}
        groups: list[ShareableUnitGroup] = []
        for name, amount in sorted(advertised.items()):
            count = int(amount)
            if count <= 0 or name in HAMI_POOL_RESOURCES:
                continue
            mig_match = MIG_RESOURCE_RE.match(name)
            if name in (GPU_RESOURCE, SHARED_GPU_RESOURCE) and single_profile:
                per_unit = self.replicas
                groups.extend(
                    self._mig(name, single_profile, count // max(per_unit, 1), per_unit, total=count)
                )
            elif name in (GPU_RESOURCE, SHARED_GPU_RESOURCE):
                groups.extend(self._cards(name, count))
            elif mig_match:
                profile = mig_match["profile"]
                per_unit = replicas_by_profile.get(profile, self.replicas if mig_match["shared"] else 1)
                groups.extend(self._mig(name, profile, count // max(per_unit, 1), per_unit, total=count))
            else:
                self.issues.append(
                    warning(
                        "node.unknown_gpu_resource", f"no unit kind for {name}", source=f"resource {name}"
                    )
                )
        return tuple(groups)

    def _cards(self, name: str, count: int) -> list[ShareableUnitGroup]:
        model, memory = self.model.key, self.model.memory_mib or None
        if self.replicas <= 1 and self.sharing is SharingStrategy.NONE:
            return [
                ShareableUnitGroup(UnitKind.WHOLE_GPU, name, 1, WHOLE_GPU_GE, model, memory, gpu_index=i)
                for i in range(count)
            ]
        kind = UnitKind.MPS_REPLICA if self.sharing is SharingStrategy.MPS else UnitKind.TIME_SLICE_REPLICA
        ge = replica_ge(replicas=self.replicas)
        if self.physical and count == self.physical * self.replicas:
            return [
                ShareableUnitGroup(kind, name, self.replicas, ge, model, gpu_index=i)
                for i in range(self.physical)
            ]
        if self.physical is not None:
            self.issues.append(
                warning(
                    "node.capacity_mismatch",
                    f"{name}={count}, labels say {self.physical} cards x {self.replicas} replicas",
                    source=f"resource {name}",
                )
            )
        return [ShareableUnitGroup(kind, name, count, ge, model)]

    def _mig(
        self, name: str, profile_name: str, instances: int, replicas: int, *, total: int | None = None
    ) -> list[ShareableUnitGroup]:
        ge, memory = self._mig_ge(profile_name)
        count = total if total is not None else instances * replicas
        if count <= 0:
            return []
        if replicas > 1:
            kind = (
                UnitKind.MPS_REPLICA if self.sharing is SharingStrategy.MPS else UnitKind.TIME_SLICE_REPLICA
            )
            return [
                ShareableUnitGroup(
                    kind,
                    name,
                    count,
                    replica_ge(replicas=replicas, base=ge),
                    self.model.key,
                    mig_profile=profile_name,
                )
            ]
        return [
            ShareableUnitGroup(
                UnitKind.MIG_INSTANCE, name, count, ge, self.model.key, memory, mig_profile=profile_name
            )
        ]

    def _mig_ge(self, profile_name: str) -> tuple[Fraction, int | None]:
        profile, issue = resolve_mig_profile(model=self.model, name=profile_name)
        if issue is not None:
            self.issues.append(issue)
        if profile is not None:
            return profile.ge, profile.memory_mib
        # Unknown card or profile: estimate from the name on the common 7/8 geometry, and say so.
        parsed = parse_profile_name(profile_name)
        compute = parsed.compute_slices if parsed else 7
        self.issues.append(
            warning(
                "mig.ge_estimated",
                f"GE of {profile_name} on {self.model.key} estimated from its name",
                source=profile_name,
            )
        )
        return mig_ge(
            compute_slices=min(compute, 7),
            memory_slices=_ESTIMATED_MEMORY_SLICES.get(compute, 8),
            card_compute_slices=7,
            card_memory_slices=8,
        ), None

    def _hami_card(self, position: int, device: HamiDevice) -> ShareableUnitGroup:
        model = resolve_gpu_model(product=device.type, memory_mib=device.memory_mib)
        return ShareableUnitGroup(
            UnitKind.HAMI_GPU,
            GPU_RESOURCE,
            1,
            WHOLE_GPU_GE,
            model.key,
            device.memory_mib,
            gpu_index=device.index if device.index is not None else position,
            gpu_uuid=device.uuid,
            split_count=device.split_count,
        )
