"""DRA (resource.k8s.io) DeviceClasses, ResourceSlices, devices with their GE, and pool completeness.

Shapes accepted (realworld/resourceslice-nvidia-gpu.yaml, deviceclass-nvidia.yaml):
  v1 / v1beta2: spec.devices[] {name, attributes, capacity, consumesCounters}
  v1beta1:      spec.devices[] {name, basic: {attributes, capacity, consumesCounters}}
  attribute values: {string|int|bool|version: ...}; capacity values: {value: <quantity>}
  spec.sharedCounters[] {name, counters: {<name>: {value}}} (partitionable devices, KEP-4815)
  spec.devices[].taints[] {key, value, effect, timeAdded} (KEP-5055; inventory/domain/device_taints.py)
  spec.devices[].allowMultipleAllocations, capacity.<name>.requestPolicy (KEP-5075; dra_capacity.py)
  spec.devices[].bindingConditions, bindingFailureConditions, bindsToNode (KEP-5007)
A pool counts only when every slice of its newest generation is seen (DESIGN §5.1).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any

from gpuplatform.quantity import QuantityError, parse_quantity
from inventory.domain.device_taints import DeviceTaint, parse_taints
from inventory.domain.dra_capacity import RequestPolicy, parse_request_policies
from inventory.domain.gpu_equivalent import WHOLE_GPU_GE, counters_ge, mig_ge
from inventory.domain.gpu_models import resolve_gpu_model, resolve_mig_profile
from inventory.domain.issues import ParseIssue, error, shorten, warning
from inventory.domain.mig_profiles import MigPlacement, parse_profile_name
from inventory.domain.raw_fields import as_int, as_list, as_map, as_str, dig

__all__ = [
    "AttributeValue",
    "CounterSet",
    "DeviceClass",
    "DraDevice",
    "DraPool",
    "GeBasis",
    "ResourceSlice",
    "assemble_pools",
    "counter_names",
    "parse_device_class",
    "parse_resource_slice",
    "undeclared_counter_issues",
]

AttributeValue = str | int | bool
# One memory slice: "memory-slice-3" (partitionable counters) or "memorySlice3" (MIG capacity).
_MEMORY_SLICE_RE = re.compile(r"^memory-?slice-?(?P<index>\d+)$", re.IGNORECASE)
_DRIVER_IN_CEL_RE = re.compile(r"""device\.driver\s*==\s*['"](?P<driver>[^'"]+)['"]""")
# Device names of the NVIDIA driver: old "gpu-1-mig-19-2-1" (parent, GI profile id, start, size),
# new "gpu-0-mig-1g10gb-19-0" (minor, profile without dots, GI profile id, start).
_OLD_MIG_NAME_RE = re.compile(r"^gpu-\d+-mig-(?P<gi>\d+)-(?P<start>\d+)-(?P<size>\d+)$")
_NEW_MIG_NAME_RE = re.compile(r"^gpu-\d+-mig-(?P<profile>\d+g\d+gb)-(?P<gi>\d+)-(?P<start>\d+)$")


class GeBasis:
    WHOLE = "whole_gpu"
    MIG_PROFILE = "mig_profile"
    COUNTERS = "counters"
    MIG_ESTIMATED = "mig_estimated"
    ASSUMED_WHOLE = "assumed_whole"


@dataclass(frozen=True, slots=True)
class DeviceClass:
    name: str
    api_version: str
    selectors: tuple[str, ...]  # CEL expressions, verbatim
    driver: str | None  # from `device.driver == '...'` in a selector, when present
    extended_resource_name: str | None
    issues: tuple[ParseIssue, ...] = ()


@dataclass(frozen=True, slots=True)
class CounterSet:
    name: str
    counters: Mapping[str, Decimal]


@dataclass(frozen=True, slots=True)
class DraDevice:
    name: str
    attributes: Mapping[str, AttributeValue]
    capacity: Mapping[str, Decimal]
    consumes_counters: tuple[CounterSet, ...]
    model_key: str
    ge: Fraction
    ge_basis: str
    placement: MigPlacement | None
    taints: tuple[DeviceTaint, ...] = ()
    # Consumable capacity: several claims share the device, each consuming part of `capacity`.
    allow_multiple_allocations: bool = False
    request_policies: Mapping[str, RequestPolicy] = field(default_factory=dict)
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    binds_to_node: bool = False

    def attribute(self, name: str, *, driver: str = "") -> AttributeValue | None:
        """An attribute by short name; qualified keys ("gpu.nvidia.com/type") are tried too."""
        if name in self.attributes:
            return self.attributes[name]
        return self.attributes.get(f"{driver}/{name}") if driver else None

    @property
    def type(self) -> str | None:
        value = self.attributes.get("type")
        return value if isinstance(value, str) else None

    @property
    def uuid(self) -> str | None:
        value = self.attributes.get("uuid")
        return value if isinstance(value, str) else None

    @property
    def parent_uuid(self) -> str | None:
        value = self.attributes.get("parentUUID")
        return value if isinstance(value, str) else None

    @property
    def mig_profile(self) -> str | None:
        value = self.attributes.get("profile")
        return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class ResourceSlice:
    name: str
    api_version: str
    driver: str
    pool_name: str
    generation: int
    resource_slice_count: int
    node_name: str | None
    all_nodes: bool
    devices: tuple[DraDevice, ...]
    shared_counters: tuple[CounterSet, ...]
    issues: tuple[ParseIssue, ...]


def parse_device_class(*, obj: Mapping[str, Any]) -> DeviceClass:
    name = as_str(dig(obj, "metadata", "name"))
    issues: list[ParseIssue] = []
    selectors: list[str] = []
    for position, selector in enumerate(as_list(dig(obj, "spec", "selectors"))):
        expression = dig(selector, "cel", "expression")
        if isinstance(expression, str) and expression.strip():
            selectors.append(expression)
        else:
            issues.append(
                warning("dra.class.bad_selector", f"selector #{position} has no CEL expression", source=name)
            )
    drivers = {m["driver"] for expression in selectors for m in _DRIVER_IN_CEL_RE.finditer(expression)}
    extended = dig(obj, "spec", "extendedResourceName")
    return DeviceClass(
        name=name,
        api_version=as_str(obj.get("apiVersion")),
        selectors=tuple(selectors),
        driver=next(iter(drivers)) if len(drivers) == 1 else None,
        extended_resource_name=extended if isinstance(extended, str) else None,
        issues=tuple(issues),
    )


def parse_resource_slice(*, obj: Mapping[str, Any]) -> ResourceSlice:
    """A ResourceSlice of any served version; bad devices are reported and skipped."""
    spec = as_map(obj.get("spec"))
    name = as_str(dig(obj, "metadata", "name"))
    issues: list[ParseIssue] = []
    pool = as_map(spec.get("pool"))
    generation, count = as_int(pool.get("generation")), as_int(pool.get("resourceSliceCount"))
    if not as_str(spec.get("driver")) or not as_str(pool.get("name")) or generation is None:
        issues.append(
            error("dra.slice.missing_pool", "driver, pool.name or pool.generation missing", source=name)
        )
    shared = tuple(_counter_set(item, issues, source=name) for item in as_list(spec.get("sharedCounters")))
    totals = {counter_set.name: counter_set.counters for counter_set in shared}
    devices = []
    for position, raw in enumerate(as_list(spec.get("devices"))):
        device = _device(as_map(raw), totals=totals, issues=issues, source=f"{name} device #{position}")
        if device is not None:
            devices.append(device)
    return ResourceSlice(
        name=name,
        api_version=as_str(obj.get("apiVersion")),
        driver=as_str(spec.get("driver")),
        pool_name=as_str(pool.get("name")),
        generation=generation or 0,
        resource_slice_count=count if count and count > 0 else 1,  # API default is 1
        node_name=as_str(spec.get("nodeName")) or None,
        all_nodes=spec.get("allNodes") is True,
        devices=tuple(devices),
        shared_counters=shared,
        issues=tuple(issues),
    )


def _quantities(raw: object, issues: list[ParseIssue], *, source: str) -> dict[str, Decimal]:
    values: dict[str, Decimal] = {}
    for key, entry in as_map(raw).items():
        try:
            values[key] = parse_quantity(as_map(entry).get("value"))  # type: ignore[arg-type]
        except QuantityError as exc:
            issues.append(warning("dra.bad_quantity", f"{key}: {exc}", source=source))
    return values


def _counter_set(raw: object, issues: list[ParseIssue], *, source: str) -> CounterSet:
    entry = as_map(raw)
    name = as_str(entry.get("name")) or as_str(entry.get("counterSet"))
    return CounterSet(name, _quantities(entry.get("counters"), issues, source=source))


def _attributes(raw: object) -> dict[str, AttributeValue]:
    attributes: dict[str, AttributeValue] = {}
    for key, entry in as_map(raw).items():
        for kind in ("string", "version", "int", "bool"):
            value = as_map(entry).get(kind)
            if isinstance(value, str | int | bool):
                attributes[key] = value
                break
    return attributes


def _device(
    raw: Mapping[str, Any],
    *,
    totals: Mapping[str, Mapping[str, Decimal]],
    issues: list[ParseIssue],
    source: str,
) -> DraDevice | None:
    name = as_str(raw.get("name"))
    if not name:
        issues.append(error("dra.slice.device_without_name", shorten(raw), source=source))
        return None
    body = as_map(raw.get("basic")) or raw  # v1beta1 wraps everything in `basic:`
    attributes = _attributes(body.get("attributes"))
    capacity = _quantities(body.get("capacity"), issues, source=f"{source} ({name})")
    consumes = tuple(
        _counter_set(item, issues, source=name) for item in as_list(body.get("consumesCounters"))
    )
    product = attributes.get("productName")
    model = resolve_gpu_model(product=product if isinstance(product, str) else "")
    placement = _placement(name, capacity, consumes, attributes)
    ge, basis = _device_ge(name, attributes, consumes, totals, model.key, issues)
    # v1beta1 keeps taints inside `basic:` too; v1beta2 and v1 beside the attributes.
    taints = parse_taints(body.get("taints") or raw.get("taints"), issues, source=f"{source} ({name})")
    return DraDevice(
        name,
        attributes,
        capacity,
        consumes,
        model.key,
        ge,
        basis,
        placement,
        taints,
        allow_multiple_allocations=body.get("allowMultipleAllocations") is True,
        request_policies=parse_request_policies(body.get("capacity"), issues, source=f"{source} ({name})"),
        binding_conditions=tuple(str(c) for c in as_list(body.get("bindingConditions"))),
        binding_failure_conditions=tuple(str(c) for c in as_list(body.get("bindingFailureConditions"))),
        binds_to_node=body.get("bindsToNode") is True,
    )


def _placement(
    name: str,
    capacity: Mapping[str, Decimal],
    consumes: tuple[CounterSet, ...],
    attributes: Mapping[str, Any],
) -> MigPlacement | None:
    slots = sorted(int(m["index"]) for key in capacity if (m := _MEMORY_SLICE_RE.match(key)))
    if not slots:
        slots = sorted(
            int(m["index"])
            for counters in consumes
            for key in counters.counters
            if (m := _MEMORY_SLICE_RE.match(key))
        )
    if slots and attributes.get("type") != "gpu":
        return MigPlacement(slots[0], len(slots))
    if old := _OLD_MIG_NAME_RE.match(name):
        return MigPlacement(int(old["start"]), int(old["size"]))
    if new := _NEW_MIG_NAME_RE.match(name):
        profile = parse_profile_name(str(attributes.get("profile", "")))
        size = {1: 1, 2: 2, 3: 4, 4: 4, 7: 8}.get(profile.compute_slices, 0) if profile else 0
        return MigPlacement(int(new["start"]), size) if size else None
    return None


def _family(counter: str) -> str:
    # All memory-slice-<i> counters are one resource: slices of the card's memory axis.
    return "memory-slices" if _MEMORY_SLICE_RE.match(counter) else counter


def _device_ge(
    name: str,
    attributes: Mapping[str, Any],
    consumes: tuple[CounterSet, ...],
    totals: Mapping[str, Mapping[str, Decimal]],
    model_key: str,
    issues: list[ParseIssue],
) -> tuple[Fraction, str]:
    kind = attributes.get("type")
    if kind == "gpu":
        return WHOLE_GPU_GE, GeBasis.WHOLE
    profile_name = attributes.get("profile")
    if kind == "mig" and isinstance(profile_name, str):
        product = attributes.get("productName")
        profile, issue = resolve_mig_profile(
            model=resolve_gpu_model(product=product if isinstance(product, str) else ""), name=profile_name
        )
        if profile is not None:
            if issue is not None:
                issues.append(issue)
            return profile.ge, GeBasis.MIG_PROFILE
    if consumes:
        consumed: dict[str, Fraction] = defaultdict(Fraction)
        card: dict[str, Fraction] = defaultdict(Fraction)
        for counter_set in consumes:
            for counter, value in counter_set.counters.items():
                consumed[_family(counter)] += Fraction(value)
            for counter, value in totals.get(counter_set.name, {}).items():
                card[_family(counter)] += Fraction(value)
        if card:
            return counters_ge(consumed=consumed, card_totals=card), GeBasis.COUNTERS
        issues.append(
            warning(
                "dra.counters_without_totals", f"{name}: consumes counters of an unknown set", source=name
            )
        )
    if kind == "mig" and isinstance(profile_name, str) and (parsed := parse_profile_name(profile_name)):
        issues.append(
            warning("mig.ge_estimated", f"{name}: {profile_name} on {model_key} estimated", source=name)
        )
        memory_slices = {1: 1, 2: 2, 3: 4, 4: 4}.get(parsed.compute_slices, 8)
        return mig_ge(
            compute_slices=min(parsed.compute_slices, 7),
            memory_slices=memory_slices,
            card_compute_slices=7,
            card_memory_slices=8,
        ), GeBasis.MIG_ESTIMATED
    if kind not in (None, "gpu"):
        issues.append(
            warning("dra.ge_assumed_whole", f"{name}: type {kind!r} counted as one whole device", source=name)
        )
    return WHOLE_GPU_GE, GeBasis.ASSUMED_WHOLE


def _undeclared_counters(devices: Iterable[DraDevice], shared: Iterable[CounterSet]) -> list[ParseIssue]:
    declared: dict[str, set[str]] = {}
    for counter_set in shared:
        declared.setdefault(counter_set.name, set()).update(counter_set.counters)
    return undeclared_counter_issues(
        consumed=(
            (device.name, counter_set.name, tuple(counter_set.counters))
            for device in devices
            for counter_set in device.consumes_counters
        ),
        declared=declared,
    )


def counter_names(piece: ResourceSlice) -> dict[str, Any]:
    """The counter names a slice declares and its devices consume, as the sync stores them to check
    a whole generation later: {"shared": {set: [counter]}, "consumes": {device: {set: [counter]}}}."""
    consumes = {
        device.name: {c.name: sorted(c.counters) for c in device.consumes_counters}
        for device in piece.devices
        if device.consumes_counters
    }
    shared = {c.name: sorted(c.counters) for c in piece.shared_counters}
    return {"shared": shared, "consumes": consumes} if shared or consumes else {}


def undeclared_counter_issues(
    *, consumed: Iterable[tuple[str, str, Iterable[str]]], declared: Mapping[str, Iterable[str]]
) -> list[ParseIssue]:
    """Counters a device consumes (device, counter set, counters) must be declared by a sharedCounters
    set of its pool: since 1.35 the driver publishes them in a slice of their own, so only the whole
    generation can tell."""
    totals = {name: set(counters) for name, counters in declared.items()}
    issues = []
    for device, set_name, counters in consumed:
        known = totals.get(set_name)
        if known is None:
            issues.append(
                error(
                    "dra.counters.undeclared_set",
                    f"{device} consumes counter set {set_name!r}, which the pool does not declare",
                    source=device,
                )
            )
            continue
        for counter in sorted(set(counters) - known):
            issues.append(
                error(
                    "dra.counters.undeclared_counter",
                    f"{device} consumes {counter!r} of {set_name!r}, which declares no such counter",
                    source=device,
                )
            )
    return issues


@dataclass(frozen=True, slots=True)
class DraPool:
    driver: str
    name: str
    generation: int  # the newest seen
    expected_slices: int  # resourceSliceCount of that generation
    seen_slices: int
    complete: bool
    slices: tuple[ResourceSlice, ...]  # newest generation only
    stale_slices: int  # older generations still listed, ignored
    issues: tuple[ParseIssue, ...] = ()

    @property
    def devices(self) -> tuple[DraDevice, ...]:
        return tuple(device for piece in self.slices for device in piece.devices)


def assemble_pools(*, slices: Iterable[ResourceSlice]) -> tuple[DraPool, ...]:
    """Group slices into pools. A pool is complete when all slices of its newest generation are seen.

    The driver bumps pool.generation when it republishes; until the API server shows every slice of
    the new generation, the old ones describe devices that may be gone and the new ones are partial,
    so neither may be counted (DESIGN §5.1). Slice identity is the object name.
    """
    grouped: dict[tuple[str, str], list[ResourceSlice]] = defaultdict(list)
    for piece in slices:
        grouped[(piece.driver, piece.pool_name)].append(piece)
    pools = []
    for (driver, pool_name), members in sorted(grouped.items()):
        newest = max(piece.generation for piece in members)
        current = [piece for piece in members if piece.generation == newest]
        expected = {piece.resource_slice_count for piece in current}
        issues: list[ParseIssue] = []
        if len(expected) > 1:
            issues.append(
                warning(
                    "dra.pool.inconsistent_count",
                    f"slices disagree on resourceSliceCount: {sorted(expected)}",
                )
            )
        seen = len({piece.name for piece in current})
        want = max(expected)
        if seen >= want:
            issues.extend(
                _undeclared_counters(
                    (d for piece in current for d in piece.devices),
                    (c for piece in current for c in piece.shared_counters),
                )
            )
        pools.append(
            DraPool(
                driver=driver,
                name=pool_name,
                generation=newest,
                expected_slices=want,
                seen_slices=seen,
                # A slice without driver or pool name cannot be told apart from others: never complete.
                complete=seen >= want and len(expected) == 1 and bool(driver) and bool(pool_name),
                slices=tuple(current),
                stale_slices=len(members) - len(current),
                issues=tuple(issues),
            )
        )
    return tuple(pools)
