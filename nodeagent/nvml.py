"""GPU inventory through NVML (``nvidia-ml-py``'s pynvml, or nodeagent.simnvml with the same calls),
in the shape of the protocol's GPU report."""

from __future__ import annotations

import re
from types import ModuleType
from typing import Any

_MIG_NAME = re.compile(r"MIG (\d+g\.\d+gb)")


def real_nvml() -> ModuleType:
    import pynvml

    return pynvml


def inventory(nvml: Any) -> list[dict[str, Any]]:
    nvml.nvmlInit()
    try:
        gpus = []
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            try:
                current, _pending = nvml.nvmlDeviceGetMigMode(handle)
            except nvml.NVMLError:  # a card without MIG support
                current = 0
            migs = []
            if current:
                for slot in range(nvml.nvmlDeviceGetMaxMigDeviceCount(handle)):
                    try:
                        mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
                    except nvml.NVMLError:
                        continue  # an empty slot answers NotFound
                    name = _text(nvml.nvmlDeviceGetName(mig))
                    match = _MIG_NAME.search(name)
                    migs.append(
                        {
                            "uuid": _text(nvml.nvmlDeviceGetUUID(mig)),
                            "gi_id": int(nvml.nvmlDeviceGetGpuInstanceId(mig)),
                            "ci_id": int(nvml.nvmlDeviceGetComputeInstanceId(mig)),
                            "profile": match.group(1) if match else name,
                            "memory_mib": int(nvml.nvmlDeviceGetMemoryInfo(mig).total // (1024 * 1024)),
                        }
                    )
            gpus.append(
                {
                    "index": index,
                    "uuid": _text(nvml.nvmlDeviceGetUUID(handle)),
                    "name": _text(nvml.nvmlDeviceGetName(handle)),
                    "memory_mib": int(nvml.nvmlDeviceGetMemoryInfo(handle).total // (1024 * 1024)),
                    "mig_mode": bool(current),
                    "mig_devices": migs,
                }
            )
        return gpus
    finally:
        nvml.nvmlShutdown()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
