"""HAMi's node and pod annotations, in the encodings seen on real clusters.

Node: `hami.io/node-nvidia-register` lists the GPUs the HAMi device plugin registered, either in the
legacy colon/comma string (9 fields per device, trailing ':') or as a JSON array (omitempty drops
`index` and `numa` when 0); `hami.io/node-handshake` carries "Reported <Go time.String()>".
Pod: the scheduler writes `hami.io/vgpu-devices-allocated` ("<uuid>,NVIDIA,<MiB>,<cores>:" per device,
';' per container), `vgpu-node`, `vgpu-time`, and the bind protocol's `bind-phase` / `bind-time`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from kubesim.scenarios.gpu_models import GpuModel
from kubesim.scenarios.ids import Timestamps

HAMI_SPLIT_COUNT = 10  # deviceSplitCount chart default
HAMI_SCHEDULER = "hami-scheduler"
REGISTER = "hami.io/node-nvidia-register"
HANDSHAKE = "hami.io/node-handshake"
ALLOCATED = "hami.io/vgpu-devices-allocated"
TO_ALLOCATE = "hami.io/vgpu-devices-to-allocate"
VGPU_NODE = "hami.io/vgpu-node"
VGPU_TIME = "hami.io/vgpu-time"
BIND_PHASE = "hami.io/bind-phase"
BIND_TIME = "hami.io/bind-time"
# HAMi's per-GPU cordon (pkg/device/nvidia/device.go): GPU UUIDs, comma-separated; its scheduler
# places nothing new on them, pods already there keep running.
DEVICE_CORDON = "hami.io/device-cordon"
GPUMEM = "nvidia.com/gpumem"
GPUCORES = "nvidia.com/gpucores"
GPUMEM_PERCENTAGE = "nvidia.com/gpumem-percentage"
HAMI_RESOURCES = (GPUMEM, GPUCORES, GPUMEM_PERCENTAGE)


@dataclass(frozen=True)
class RegisteredDevice:
    uuid: str
    split_count: int
    memory_mib: int
    cores: int
    type: str
    numa: int
    healthy: bool
    index: int
    mode: str


class AllocatedShare(NamedTuple):
    uuid: str
    memory_mib: int
    cores: int


def hami_type(model: GpuModel) -> str:
    # The plugin prefixes the vendor to NVML's name, which often starts with "NVIDIA" already.
    return f"NVIDIA-{model.nvml_name}"


def go_time(moment: datetime, monotonic_seconds: float) -> str:
    """Go's time.String() of a UTC instant, monotonic reading included, as the plugin writes it."""
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f") + f"000 +0000 UTC m=+{monotonic_seconds:.9f}"


def hami_register_annotations(
    model: GpuModel, uuids: list[str], ts: Timestamps, *, legacy: bool
) -> dict[str, str]:
    devices = [
        RegisteredDevice(
            uuid=uuid,
            split_count=HAMI_SPLIT_COUNT,
            memory_mib=model.memory_mib,
            cores=100,
            type=hami_type(model),
            numa=0 if i < len(uuids) // 2 or len(uuids) == 1 else 1,
            healthy=True,
            index=i,
            mode="hami-core",
        )
        for i, uuid in enumerate(uuids)
    ]
    return {
        HANDSHAKE: "Reported " + go_time(ts.now, 245392.773247485),
        REGISTER: encode_register(devices, legacy=legacy),
    }


def encode_register(devices: list[RegisteredDevice], *, legacy: bool) -> str:
    if legacy:
        return "".join(
            f"{d.uuid},{d.split_count},{d.memory_mib},{d.cores},{d.type},{d.numa},"
            f"{'true' if d.healthy else 'false'},{d.index},{d.mode}:"
            for d in devices
        )
    items: list[dict[str, Any]] = []
    for d in devices:
        item: dict[str, Any] = {"id": d.uuid}
        if d.index:
            item["index"] = d.index
        item.update(count=d.split_count, devmem=d.memory_mib, devcore=d.cores, type=d.type)
        if d.numa:
            item["numa"] = d.numa
        item.update(mode=d.mode, health=d.healthy, devicepairscore={})
        items.append(item)
    return json.dumps(items, separators=(",", ":"))


def cordoned(annotations: dict[str, Any]) -> frozenset[str]:
    """The GPU UUIDs a node's `hami.io/device-cordon` names (blanks between commas ignored)."""
    value = annotations.get(DEVICE_CORDON)
    if not isinstance(value, str):
        return frozenset()
    return frozenset(part.strip() for part in value.split(",") if part.strip())


def parse_register(value: str) -> list[RegisteredDevice]:
    """Both encodings; 7-field legacy entries (no index/mode) get their position and hami-core."""
    value = value.strip()
    if value.startswith("["):
        return [
            RegisteredDevice(
                uuid=item["id"],
                split_count=int(item.get("count", HAMI_SPLIT_COUNT)),
                memory_mib=int(item.get("devmem", 0)),
                cores=int(item.get("devcore", 100)),
                type=str(item.get("type", "")),
                numa=int(item.get("numa", 0)),
                healthy=bool(item.get("health", True)),
                index=int(item.get("index", 0)),
                mode=str(item.get("mode", "hami-core")),
            )
            for item in json.loads(value)
        ]
    devices = []
    for position, chunk in enumerate(part for part in value.split(":") if part):
        fields = chunk.split(",")
        if len(fields) < 7:
            continue
        devices.append(
            RegisteredDevice(
                uuid=fields[0],
                split_count=int(fields[1]),
                memory_mib=int(fields[2]),
                cores=int(fields[3]),
                type=fields[4],
                numa=int(fields[5]),
                healthy=fields[6] == "true",
                index=int(fields[7]) if len(fields) > 7 else position,
                mode=fields[8] if len(fields) > 8 else "hami-core",
            )
        )
    return devices


def encode_allocated(shares: list[AllocatedShare]) -> str:
    """One GPU container's devices, then the container terminator ';'."""
    return "".join(f"{s.uuid},NVIDIA,{s.memory_mib},{s.cores}:" for s in shares) + ";"


def parse_allocated(value: str) -> list[AllocatedShare]:
    """All shares of all containers; empty containers (';' or ',,0,0:;') contribute nothing."""
    shares = []
    for container in value.split(";"):
        for chunk in container.split(":"):
            fields = chunk.split(",")
            if len(fields) < 4 or not fields[0]:
                continue
            uuid = fields[0].split("[", 1)[0]  # dynamic-MIG ids carry a "[tmpl-idx]" suffix
            shares.append(AllocatedShare(uuid, int(fields[2]), int(fields[3])))
    return shares


def pod_annotations(node: str, shares: list[AllocatedShare], epoch: int, *, bound: bool) -> dict[str, str]:
    """Annotations of a HAMi pod once the scheduler picked devices; `bound` after the bind succeeded."""
    allocated = encode_allocated(shares)
    return {
        ALLOCATED: allocated,
        TO_ALLOCATE: ";" if bound else allocated,
        VGPU_NODE: node,
        VGPU_TIME: str(epoch),
        BIND_PHASE: "success" if bound else "allocating",
        BIND_TIME: str(epoch),
    }
