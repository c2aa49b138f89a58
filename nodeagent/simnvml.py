"""A simulated NVML behind the calls of ``pynvml`` (nvidia-ml-py) that nodeagent.nvml uses, for tests
and machines without GPUs (``nvml.backend: simulated``).

GPUs come from the configuration; MIG devices from a callable (the agent passes one that reads its
node's ``nvidia.com/mig-<profile>`` allocatable through the Kubernetes API, which is what the device
plugin advertises once mig-manager has partitioned the cards).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

NVML_DEVICE_MIG_ENABLE = 1
NVML_DEVICE_MIG_DISABLE = 0


class NVMLError(Exception):
    pass


class NVMLError_NotFound(NVMLError):
    pass


@dataclass
class _Memory:
    total: int
    free: int
    used: int = 0


@dataclass
class _Mig:
    parent: _Gpu
    gi_id: int
    ci_id: int
    profile: str
    memory_mib: int

    @property
    def uuid(self) -> str:
        digest = hashlib.sha256(f"{self.parent.uuid}/{self.gi_id}".encode()).hexdigest()
        return f"MIG-{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


@dataclass
class _Gpu:
    index: int
    name: str
    uuid: str
    memory_mib: int
    migs: list[_Mig] = field(default_factory=list)


_gpus: list[_Gpu] = []
_mig_source: Callable[[], dict[str, int]] | None = None


def configure(
    gpus: list[dict[str, Any]], node: str, mig_source: Callable[[], dict[str, int]] | None = None
) -> None:
    """GPUs as [{"name": ..., "memory_mib": ..., "count": n}]; uuids are stable per node."""
    global _mig_source
    _gpus.clear()
    for spec in gpus:
        for _ in range(int(spec.get("count", 1))):
            index = len(_gpus)
            digest = hashlib.sha256(f"{node}/{index}".encode()).hexdigest()
            uuid = f"GPU-{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"
            _gpus.append(_Gpu(index, str(spec["name"]), uuid, int(spec["memory_mib"])))
    _mig_source = mig_source


def _memory_of(profile: str) -> int:
    try:
        return int(profile.split(".")[1].removesuffix("gb")) * 1024 - 256
    except (IndexError, ValueError):
        return 0


def nvmlInit() -> None:
    if not _gpus:
        raise NVMLError("simulated NVML has no GPUs configured")
    counts = _mig_source() if _mig_source else {}
    for gpu in _gpus:
        gpu.migs = []
    # The cards share the node's MIG devices round-robin, as a uniform geometry gives them.
    slot = 0
    for profile, count in sorted(counts.items()):
        for _ in range(count):
            gpu = _gpus[slot % len(_gpus)]
            gpu.migs.append(_Mig(gpu, len(gpu.migs) + 1, 0, profile, _memory_of(profile)))
            slot += 1


def nvmlShutdown() -> None:
    pass


def nvmlDeviceGetCount() -> int:
    return len(_gpus)


def nvmlDeviceGetHandleByIndex(index: int) -> _Gpu:
    return _gpus[index]


def nvmlDeviceGetName(handle: _Gpu | _Mig) -> str:
    if isinstance(handle, _Mig):
        return f"{handle.parent.name} MIG {handle.profile}"
    return handle.name


def nvmlDeviceGetUUID(handle: _Gpu | _Mig) -> str:
    return handle.uuid


def nvmlDeviceGetMemoryInfo(handle: _Gpu | _Mig) -> _Memory:
    mib = handle.memory_mib
    return _Memory(total=mib * 1024 * 1024, free=mib * 1024 * 1024)


def nvmlDeviceGetMigMode(handle: _Gpu) -> tuple[int, int]:
    mode = NVML_DEVICE_MIG_ENABLE if handle.migs else NVML_DEVICE_MIG_DISABLE
    return mode, mode


def nvmlDeviceGetMaxMigDeviceCount(handle: _Gpu) -> int:
    return 7


def nvmlDeviceGetMigDeviceHandleByIndex(handle: _Gpu, index: int) -> _Mig:
    if index >= len(handle.migs):
        raise NVMLError_NotFound("Not Found")
    return handle.migs[index]


def nvmlDeviceGetGpuInstanceId(handle: _Mig) -> int:
    return handle.gi_id


def nvmlDeviceGetComputeInstanceId(handle: _Mig) -> int:
    return handle.ci_id
