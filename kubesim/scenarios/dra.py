"""DRA objects of the NVIDIA driver (gpu.nvidia.com): DeviceClasses, ResourceSlices, ResourceClaims.

Shapes follow realworld/resourceslice-nvidia-gpu.yaml (v1, attribute and capacity names of the
driver's deviceinfo.go/mig.go), deviceclass-nvidia.yaml and resourceclaim-status.yaml. Three pool
kinds: whole GPUs, static MIG devices (mig-parted applied before the driver starts), and partitionable
GPUs (KEP-4815: one counter set per GPU in its own slice; the full GPU and every MIG placement consume
from it, so the allocator must keep their sum within the set). And shared GPUs (KEP-5075): whole GPUs
the driver publishes with `allowMultipleAllocations` and a request policy on `memory` (its
ConsumableShares gate; see `consumable_device`), each claim consuming a share of the card.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kubesim.scenarios import consumable
from kubesim.scenarios.gpu_models import GpuModel, MigProfile
from kubesim.scenarios.ids import Timestamps, mig_uuid
from kubesim.scenarios.mig_geometry import PlacedInstance
from kubesim.scenarios.quantity import parse_quantity

DRIVER = "gpu.nvidia.com"
GPU_CLASS = "gpu.nvidia.com"
MIG_CLASS = "mig.nvidia.com"
DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"
POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"
MAX_DEVICES_PER_SLICE = 128
MAX_COUNTER_DEVICES_PER_SLICE = 64  # the v1 limit once a device consumes counters
SHARE_STEP = 2**20  # the driver's 1Mi step for memory shares
# Pool modes of shared GPUs, by the driver's --consumable-shares option: "memory" (a claim naming no
# memory takes the whole card) or a number of shares N (memory defaults to 0, `shares` to 1 of N).
SHARE_MODES = {"shares-memory": "memory", "shares-4": "4"}


def device_classes() -> list[dict[str, Any]]:
    """The chart's classes: whole GPUs and MIG devices, selected on the driver's `type` attribute."""
    return [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": GPU_CLASS},
            "spec": {
                "selectors": [
                    {
                        "cel": {
                            "expression": "device.driver == 'gpu.nvidia.com' && "
                            "device.attributes['gpu.nvidia.com'].type == 'gpu'"
                        }
                    }
                ],
                "extendedResourceName": "nvidia.com/gpu",
            },
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": MIG_CLASS},
            "spec": {
                "selectors": [
                    {
                        "cel": {
                            "expression": "device.driver == 'gpu.nvidia.com' && "
                            "device.attributes['gpu.nvidia.com'].type == 'mig'"
                        }
                    }
                ]
            },
        },
    ]


@dataclass
class DraDevice:
    """A device published in a pool, with what the generator needs to allocate it consistently."""

    name: str
    kind: str  # "gpu" | "mig"
    gpu_index: int
    profile: MigProfile | None = None
    start: int = 0

    @property
    def label(self) -> str:
        return "gpu" if self.profile is None else f"mig:{self.profile.name}"


@dataclass
class DraPool:
    node: str
    model: GpuModel
    mode: str
    generation: int
    slices: list[dict[str, Any]] = field(default_factory=list)
    devices: list[DraDevice] = field(default_factory=list)
    counter_sets: int = 0


class _AttributeCache:
    """Attribute value dicts shared by all devices of a model: 40,000 GPUs carry the same few values."""

    def __init__(self) -> None:
        self._values: dict[tuple[str, Any], dict[str, Any]] = {}

    def value(self, kind: str, value: Any) -> dict[str, Any]:
        key = (kind, value)
        cached = self._values.get(key)
        if cached is None:
            cached = {kind: value}
            self._values[key] = cached
        return cached


_ATTRS = _AttributeCache()
DRIVER_VERSION = "580.95.5"
CUDA_DRIVER_VERSION = "13.0.0"


def _common_attributes(model: GpuModel) -> dict[str, dict[str, Any]]:
    return {
        "architecture": _ATTRS.value("string", model.architecture),
        "brand": _ATTRS.value("string", "Nvidia"),
        "cudaComputeCapability": _ATTRS.value("version", f"{model.compute_major}.{model.compute_minor}.0"),
        "cudaDriverVersion": _ATTRS.value("version", CUDA_DRIVER_VERSION),
        "driverVersion": _ATTRS.value("version", DRIVER_VERSION),
        "productName": _ATTRS.value("string", model.nvml_name),
    }


def _pcie_bus_id(index: int) -> str:
    return f"0000:{0x18 + index * 0x10:02x}:00.0"


def _gpu_device(model: GpuModel, index: int, uuid: str) -> dict[str, Any]:
    attributes = _common_attributes(model)
    attributes.update(
        {
            "index": _ATTRS.value("int", index),
            "minor": _ATTRS.value("int", index),
            "pcieBusID": _ATTRS.value("string", _pcie_bus_id(index)),
            "type": _ATTRS.value("string", "gpu"),
            "uuid": {"string": uuid},
        }
    )
    return {
        "name": f"gpu-{index}",
        "attributes": attributes,
        "capacity": {"memory": {"value": model.dra_memory}},
    }


def consumable_device(device: dict[str, Any], option: str) -> dict[str, Any]:
    """A whole-GPU device as the NVIDIA driver publishes it under its ConsumableShares gate
    (kubernetes-sigs/dra-driver-nvidia-gpu cmd/gpu-kubelet-plugin/consumable_shares.go, facts only):
    `allowMultipleAllocations: true`; `memory` rounded down to a multiple of 1Mi with a validRange of
    1Mi steps up to it, default the whole memory and min 1Mi in "memory" mode, default and min 0 with
    N shares, where a `shares` capacity of N (default 1, 1..N in steps of 1) comes beside it."""
    memory = int(parse_quantity(device["capacity"]["memory"]["value"])) // SHARE_STEP * SHARE_STEP
    top = consumable.quantity_text(Fraction(memory))
    step = consumable.quantity_text(Fraction(SHARE_STEP))
    shared = dict(device)
    shared["allowMultipleAllocations"] = True
    if option == "memory":
        policy = {"default": top, "validRange": {"min": step, "max": top, "step": step}}
        shared["capacity"] = {"memory": {"value": top, "requestPolicy": policy}}
    else:
        policy = {"default": "0", "validRange": {"min": "0", "max": top, "step": step}}
        shares = {"default": "1", "validRange": {"min": "1", "max": option, "step": "1"}}
        shared["capacity"] = {
            "memory": {"value": top, "requestPolicy": policy},
            "shares": {"value": option, "requestPolicy": shares},
        }
    return shared


def mig_device_name(index: int, inst: PlacedInstance) -> str:
    return f"gpu-{index}-mig-{inst.profile.slug}-{inst.profile.gi_id}-{inst.start}"


_MIG_CAPACITY: dict[tuple[str, str, int], dict[str, dict[str, str]]] = {}
_CONSUMES: dict[tuple[str, int, str, int], list[dict[str, Any]]] = {}


def _mig_capacity(model: GpuModel, inst: PlacedInstance) -> dict[str, dict[str, str]]:
    """Capacity of a MIG device: equal for every device of one profile and placement, so shared."""
    key = (model.key, inst.profile.name, inst.start)
    cached = _MIG_CAPACITY.get(key)
    if cached is not None:
        return cached
    profile = inst.profile
    capacity: dict[str, dict[str, str]] = {
        "copyEngines": {"value": str(profile.copy_engines)},
        "decoders": {"value": str(profile.decoders)},
        "encoders": {"value": str(profile.encoders)},
        "jpegEngines": {"value": str(profile.jpeg_engines)},
        "memory": {"value": f"{profile.memory_mib}Mi"},
        "multiprocessors": {"value": str(profile.multiprocessors)},
        "ofaEngines": {"value": str(profile.ofa_engines)},
    }
    for slot in range(inst.start, inst.start + profile.memory_slots):
        capacity[f"memorySlice{slot}"] = {"value": "1"}
    _MIG_CAPACITY[key] = capacity
    return capacity


def _mig_device(
    model: GpuModel, node: str, index: int, parent_uuid: str, inst: PlacedInstance
) -> dict[str, Any]:
    profile = inst.profile
    attributes = _common_attributes(model)
    attributes.update(
        {
            "parentUUID": {"string": parent_uuid},
            "pcieBusID": _ATTRS.value("string", _pcie_bus_id(index)),
            "profile": _ATTRS.value("string", profile.name),
            "type": _ATTRS.value("string", "mig"),
            "uuid": {"string": mig_uuid(node, index, inst.start, profile.name)},
        }
    )
    return {
        "name": mig_device_name(index, inst),
        "attributes": attributes,
        "capacity": _mig_capacity(model, inst),
    }


def counter_set_name(index: int) -> str:
    return f"gpu-{index}-counter-set"


def gpu_counters(model: GpuModel) -> dict[str, str]:
    """What one physical GPU offers, in the driver's counter names (partitions.go)."""
    full = model.mig_profiles[-1]
    counters = {
        "multiprocessors": str(full.multiprocessors),
        "copy-engines": str(full.copy_engines),
        "decoders": str(full.decoders),
        "encoders": str(full.encoders),
        "jpeg-engines": str(full.jpeg_engines),
        "ofa-engines": str(full.ofa_engines),
        "memory": f"{model.memory_mib}Mi",
    }
    for slot in range(8):
        counters[f"memory-slice-{slot}"] = "1"
    return counters


def profile_counters(profile: MigProfile, start: int) -> dict[str, str]:
    counters = {
        "multiprocessors": str(profile.multiprocessors),
        "copy-engines": str(profile.copy_engines),
        "decoders": str(profile.decoders),
        "encoders": str(profile.encoders),
        "jpeg-engines": str(profile.jpeg_engines),
        "ofa-engines": str(profile.ofa_engines),
        "memory": f"{profile.memory_mib}Mi",
    }
    for slot in range(start, start + profile.memory_slots):
        counters[f"memory-slice-{slot}"] = "1"
    return counters


def _consumes(model: GpuModel, index: int, profile: MigProfile | None, start: int) -> list[dict[str, Any]]:
    """consumesCounters of a device (profile None: the full GPU); shared between equal devices."""
    key = (model.key, index, profile.name if profile else "", start)
    cached = _CONSUMES.get(key)
    if cached is None:
        counters = gpu_counters(model) if profile is None else profile_counters(profile, start)
        cached = [
            {
                "counterSet": counter_set_name(index),
                "counters": {k: {"value": v} for k, v in counters.items()},
            }
        ]
        _CONSUMES[key] = cached
    return cached


def build_pool(
    *,
    node: str,
    node_uid: str,
    model: GpuModel,
    mode: str,
    uuids: list[str],
    layout: list[list[PlacedInstance]],
    generation: int,
    ts: Timestamps,
    age_seconds: int,
    slice_suffixes: list[str],
) -> DraPool:
    """All ResourceSlices of one node's pool (pool name = node name, as the NVIDIA driver names it)."""
    pool = DraPool(node=node, model=model, mode=mode, generation=generation)
    device_chunks: list[list[dict[str, Any]]] = []
    counter_slice: list[dict[str, Any]] | None = None
    if mode == "gpu":
        devices = [_gpu_device(model, i, uuid) for i, uuid in enumerate(uuids)]
        pool.devices = [DraDevice(f"gpu-{i}", "gpu", i) for i in range(len(uuids))]
        device_chunks = _chunks(devices, 4)  # several slices per pool, as large drivers publish
    elif mode in SHARE_MODES:
        devices = [
            consumable_device(_gpu_device(model, i, uuid), SHARE_MODES[mode]) for i, uuid in enumerate(uuids)
        ]
        pool.devices = [DraDevice(f"gpu-{i}", "gpu", i) for i in range(len(uuids))]
        device_chunks = [devices]
    elif mode == "mig":
        devices = []
        for i, gpu in enumerate(layout):
            for inst in gpu:
                devices.append(_mig_device(model, node, i, uuids[i], inst))
                pool.devices.append(DraDevice(mig_device_name(i, inst), "mig", i, inst.profile, inst.start))
            if not gpu:
                devices.append(_gpu_device(model, i, uuids[i]))
                pool.devices.append(DraDevice(f"gpu-{i}", "gpu", i))
        device_chunks = _chunks(devices, max(1, (len(devices) + 1) // 2))
    elif mode == "partitionable":
        counter_slice = [
            {
                "name": counter_set_name(i),
                "counters": {k: {"value": v} for k, v in gpu_counters(model).items()},
            }
            for i in range(len(uuids))
        ]
        pool.counter_sets = len(counter_slice)
        devices = []
        for i, uuid in enumerate(uuids):
            full = _gpu_device(model, i, uuid)
            full["consumesCounters"] = _consumes(model, i, None, 0)
            devices.append(full)
            pool.devices.append(DraDevice(f"gpu-{i}", "gpu", i))
            for profile in model.mig_profiles:
                if profile.name.endswith("+me"):
                    continue  # media-extension profiles are left out to keep pools small
                for start in profile.starts:
                    inst = PlacedInstance(profile, start)
                    device = _mig_device(model, node, i, uuid, inst)
                    device["consumesCounters"] = _consumes(model, i, profile, start)
                    devices.append(device)
                    pool.devices.append(DraDevice(mig_device_name(i, inst), "mig", i, profile, start))
        device_chunks = _chunks(devices, MAX_COUNTER_DEVICES_PER_SLICE)
    else:
        raise ValueError(f"unknown DRA pool mode {mode!r}")

    count = len(device_chunks) + (1 if counter_slice is not None else 0)
    specs: list[dict[str, Any]] = []
    if counter_slice is not None:
        specs.append({"sharedCounters": counter_slice})
    specs.extend({"devices": chunk} for chunk in device_chunks)
    for n, extra in enumerate(specs):
        spec: dict[str, Any] = {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"generation": generation, "name": node, "resourceSliceCount": count},
        }
        spec.update(extra)
        suffix = slice_suffixes[n % len(slice_suffixes)] + ("" if n < len(slice_suffixes) else str(n))
        pool.slices.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {
                    "name": f"{node}-{DRIVER}-{suffix}",
                    "generateName": f"{node}-{DRIVER}-",
                    "creationTimestamp": ts.ago(age_seconds),
                    "ownerReferences": [
                        {
                            "apiVersion": "v1",
                            "controller": True,
                            "kind": "Node",
                            "name": node,
                            "uid": node_uid,
                        }
                    ],
                },
                "spec": spec,
            }
        )
    return pool


def _chunks(items: list[dict[str, Any]], size: int) -> list[list[dict[str, Any]]]:
    return [items[i : i + size] for i in range(0, len(items), size)] or [[]]


def share_results(pool: DraPool, allocation: dict[str, Any], claim_key: str) -> None:
    """On a pool of shared GPUs, give each result the share the scheduler would: a claim of the
    scenario names no capacity, so it consumes each capacity's default (KEP-5075)."""
    if pool.mode not in SHARE_MODES:
        return
    published = {d["name"]: d for piece in pool.slices for d in piece["spec"].get("devices") or []}
    for result in allocation["devices"]["results"]:
        consumed = consumable.consumption(published[result["device"]], {}) or {}
        key = {"metadata": {"uid": claim_key}}
        result["shareID"] = consumable.share_id(key, result["request"], (DRIVER, pool.node, result["device"]))
        result["consumedCapacity"] = {k: consumable.quantity_text(v) for k, v in consumed.items()}


def claim_request(device_class: str, count: int, selector: str | None) -> dict[str, Any]:
    exactly: dict[str, Any] = {
        "deviceClassName": device_class,
        "allocationMode": "ExactCount",
        "count": count,
    }
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return {"name": "gpu", "exactly": exactly}


def node_selector_for(node: str) -> dict[str, Any]:
    return {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
    }


def allocation_status(
    node: str, devices: list[str], request: str = "gpu", selector: dict[str, Any] | None = None
) -> dict[str, Any]:
    """status.allocation as the scheduler writes it: one result per device, pinned to the node."""
    return {
        "devices": {
            "results": [
                {"request": request, "driver": DRIVER, "pool": node, "device": device} for device in devices
            ]
        },
        "nodeSelector": selector if selector is not None else node_selector_for(node),
    }


def claim_state(claim: dict[str, Any]) -> str:
    """kubectl's STATE column: pending | allocated | allocated,reserved, prefixed by deleted when deleting."""
    states = []
    if claim.get("metadata", {}).get("deletionTimestamp"):
        states.append("deleted")
    status = claim.get("status") or {}
    if status.get("allocation"):
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
    elif not states:
        states.append("pending")
    return ",".join(states)
