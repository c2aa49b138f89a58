"""HAMi pod annotations: which card slices the scheduler gave each container.

Grammar of hami.io/vgpu-devices-allocated / -to-allocate (realworld/hami-pod-annotations.yaml):
per container "<dev>:<dev>:" terminated by ";", dev = "uuid,type,memory MiB,cores percent".
An empty container is ";" or ",,0,0:;" (both seen, HAMi#991), so positions are best effort.
Dynamic MIG appends "[<template>-<instance>]" to the uuid (HAMi#1054).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction

from gpuplatform.quantity import QuantityError, parse_quantity
from inventory.domain.gpu_equivalent import hami_share_ge
from inventory.domain.issues import ParseIssue, error, shorten, warning
from inventory.domain.mig_profiles import MigPlacement
from inventory.domain.raw_fields import as_int, as_map

__all__ = [
    "HAMI_ALLOCATED_KEY",
    "HAMI_TO_ALLOCATE_KEY",
    "HamiContainerDevice",
    "HamiMigAllocation",
    "HamiPodAssignment",
    "hami_memory_request_mib",
    "parse_hami_device_list",
    "parse_hami_mig_allocations",
    "parse_hami_pod_annotations",
]

HAMI_ALLOCATED_KEY = "hami.io/vgpu-devices-allocated"
HAMI_TO_ALLOCATE_KEY = "hami.io/vgpu-devices-to-allocate"
HAMI_NODE_KEY = "hami.io/vgpu-node"
HAMI_BIND_PHASE_KEY = "hami.io/bind-phase"
HAMI_BIND_TIME_KEY = "hami.io/bind-time"
HAMI_MIG_ALLOCATIONS_KEY = "hami.io/vgpu-mig-allocations"

_MIG_SUFFIX_RE = re.compile(r"^(?P<uuid>.+?)\[(?P<template>\d+)-(?P<instance>\d+)\]$")


@dataclass(frozen=True, slots=True)
class HamiContainerDevice:
    uuid: str  # the card's GPU-uuid, MIG suffix removed
    type: str  # "NVIDIA"
    memory_mib: int  # for dynamic MIG: the template's memory, not what the pod asked for
    cores: int  # percent of the card; 0 = no core limit
    mig_template: int | None = None
    mig_instance: int | None = None

    def share_ge(self, *, card_memory_mib: int, card_cores_percent: int = 100) -> Fraction:
        """DESIGN §3 HAMi share: max(cores/100, memory/card memory), on the card's registered totals."""
        return hami_share_ge(
            cores_percent=self.cores,
            memory_mib=self.memory_mib,
            card_memory_mib=card_memory_mib,
            card_cores_percent=card_cores_percent,
        )


@dataclass(frozen=True, slots=True)
class HamiMigAllocation:
    """One entry of hami.io/vgpu-mig-allocations (HAMi >= 2.10; schema from source, no capture)."""

    container_index: int
    device_index: int
    gpu_uuid: str
    profile: str
    placement: MigPlacement | None
    mig_uuid: str | None


@dataclass(frozen=True, slots=True)
class HamiPodAssignment:
    node_name: str | None
    bind_phase: str | None  # allocating | failed | success
    bind_time: datetime | None
    allocated: tuple[tuple[HamiContainerDevice, ...], ...]  # per container slot
    to_allocate: tuple[tuple[HamiContainerDevice, ...], ...]
    mig_allocations: tuple[HamiMigAllocation, ...]
    issues: tuple[ParseIssue, ...]

    @property
    def devices(self) -> tuple[HamiContainerDevice, ...]:
        """Every device held, all containers together (what the allocation ledger needs)."""
        return tuple(device for container in self.allocated for device in container)


def parse_hami_device_list(
    *, value: str | None, source: str = HAMI_ALLOCATED_KEY
) -> tuple[tuple[tuple[HamiContainerDevice, ...], ...], tuple[ParseIssue, ...]]:
    """Per-container device lists; a bad device record is reported and skipped."""
    text = (value or "").strip()
    if not text:
        return (), ()
    segments = text.split(";")
    if segments[-1].strip() == "":  # the terminator after the last container
        segments = segments[:-1]
    containers: list[tuple[HamiContainerDevice, ...]] = []
    issues: list[ParseIssue] = []
    for segment in segments:
        devices: list[HamiContainerDevice] = []
        for record in segment.split(":"):
            if not record.strip():
                continue
            device, problem = _parse_device(record.strip())
            if problem:
                issues.append(error("hami.pod.bad_device", problem, source=source))
            elif device is not None:
                devices.append(device)
        containers.append(tuple(devices))
    return tuple(containers), tuple(issues)


def _parse_device(record: str) -> tuple[HamiContainerDevice | None, str]:
    fields = record.split(",")
    if len(fields) != 4:
        return None, f"expected uuid,type,memory,cores: {shorten(record)}"
    uuid, dev_type, memory, cores = (field.strip() for field in fields)
    if not memory.isdigit() or not cores.isdigit():
        return None, f"non-numeric memory/cores: {shorten(record)}"
    if not uuid:
        return None, ""  # ",,0,0" is how some HAMi versions write "no device for this container"
    template = instance = None
    match = _MIG_SUFFIX_RE.match(uuid)
    if match is not None:
        uuid, template, instance = match["uuid"], int(match["template"]), int(match["instance"])
    return HamiContainerDevice(uuid, dev_type, int(memory), int(cores), template, instance), ""


def parse_hami_mig_allocations(
    *, value: str | None
) -> tuple[tuple[HamiMigAllocation, ...], tuple[ParseIssue, ...]]:
    text = (value or "").strip()
    if not text:
        return (), ()
    try:
        decoded = json.loads(text)
    except json.JSONDecodeError:
        return (), (
            error("hami.pod.mig_allocations_invalid", shorten(text), source=HAMI_MIG_ALLOCATIONS_KEY),
        )
    allocations: list[HamiMigAllocation] = []
    issues: list[ParseIssue] = []
    for item in decoded if isinstance(decoded, list) else [decoded]:
        entry = as_map(item)
        container, device = as_int(entry.get("containerIndex", 0)), as_int(entry.get("deviceIndex", 0))
        uuid, profile = entry.get("gpuUUID"), entry.get("profile")
        if container is None or device is None or not isinstance(uuid, str) or not isinstance(profile, str):
            issues.append(
                error("hami.pod.mig_allocation_bad", shorten(item), source=HAMI_MIG_ALLOCATIONS_KEY)
            )
            continue
        placement_map = as_map(entry.get("placement"))
        start, size = as_int(placement_map.get("start")), as_int(placement_map.get("size"))
        placement = MigPlacement(start, size) if start is not None and size else None
        mig_uuid = entry.get("migUUID")
        allocations.append(
            HamiMigAllocation(
                container, device, uuid, profile, placement, mig_uuid if isinstance(mig_uuid, str) else None
            )
        )
    return tuple(allocations), tuple(issues)


def parse_hami_pod_annotations(*, annotations: Mapping[str, str]) -> HamiPodAssignment:
    """Everything HAMi wrote on a pod; missing keys give None/empty, bad values give issues."""
    allocated, issues_a = parse_hami_device_list(value=annotations.get(HAMI_ALLOCATED_KEY))
    to_allocate, issues_b = parse_hami_device_list(
        value=annotations.get(HAMI_TO_ALLOCATE_KEY), source=HAMI_TO_ALLOCATE_KEY
    )
    mig, issues_c = parse_hami_mig_allocations(value=annotations.get(HAMI_MIG_ALLOCATIONS_KEY))
    issues = [*issues_a, *issues_b, *issues_c]
    bind_time = None
    raw_time = annotations.get(HAMI_BIND_TIME_KEY)
    if raw_time is not None:
        seconds = as_int(raw_time)
        if seconds is None:
            issues.append(warning("hami.pod.bad_bind_time", shorten(raw_time), source=HAMI_BIND_TIME_KEY))
        else:
            bind_time = datetime.fromtimestamp(seconds, tz=UTC)
    return HamiPodAssignment(
        node_name=annotations.get(HAMI_NODE_KEY) or None,
        bind_phase=annotations.get(HAMI_BIND_PHASE_KEY) or None,
        bind_time=bind_time,
        allocated=allocated,
        to_allocate=to_allocate,
        mig_allocations=mig,
        issues=tuple(issues),
    )


def hami_memory_request_mib(*, quantity: str | int) -> int:
    """A `nvidia.com/gpumem` request in MiB. It is a plain Kubernetes quantity counted in MiB, so
    "8k" (HAMi#1054) is 8000 MiB, not 8 GiB. Raises QuantityError on garbage."""
    value = parse_quantity(quantity)
    if value < 0 or value != value.to_integral_value():
        raise QuantityError(f"gpumem must be a whole, non-negative number of MiB: {quantity!r}")
    return int(value)
