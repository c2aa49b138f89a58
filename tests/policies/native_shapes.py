"""The native config schemas, as the upstream Go types define them, to check configs parsed back.

Device plugin: NVIDIA/k8s-device-plugin api/config/v1 (config.go, flags.go, resources.go,
replicas.go, sharing.go) at 1b826acc; read, not copied. A key outside the struct's JSON tags is
ignored by the plugin, silently, which is how realworld's k8s-device-plugin#1433 config lost its
``renameByDefault`` (placed under ``flags``): the checker reports it as an unknown key.
mig-parted: the ``version: v1`` ``mig-configs`` entries (devices, device-filter, mig-enabled,
mig-devices). HAMi: the nvidia section of the chart's scheduler device ConfigMap.
"""

from __future__ import annotations

from typing import Any

_FLAGS = {
    "migStrategy", "failOnInitError", "mpsRoot", "nvidiaDriverRoot", "nvidiaDevRoot", "gdrcopyEnabled",
    "gdsEnabled", "mofedEnabled", "useNodeFeatureAPI", "deviceDiscoveryStrategy", "plugin", "gfd",
}  # fmt: skip
_PLUGIN_FLAGS = {
    "passDeviceSpecs", "deviceListStrategy", "deviceIDStrategy", "cdiAnnotationPrefix", "nvidiaCTKPath",
    "containerDriverRoot", "sharedDevicesAllocationPolicy",
}  # fmt: skip
_GFD_FLAGS = {"oneshot", "noTimestamp", "sleepInterval", "outputFile", "machineTypeFile"}
_REPLICATED = {"renameByDefault", "failRequestsGreaterThanOne", "resources"}
_REPLICATED_RESOURCE = {"name", "rename", "devices", "replicas"}


def _unknown(where: str, value: Any, allowed: set[str]) -> list[str]:
    if not isinstance(value, dict):
        return [f"{where}: expected a mapping"]
    return [f"{where}.{key}: unknown key" for key in value if key not in allowed]


def device_plugin_problems(config: dict[str, Any]) -> list[str]:
    problems = _unknown("config", config, {"version", "flags", "resources", "sharing", "imex"})
    if config.get("version") != "v1":
        problems.append("config.version: must be v1")
    flags = config.get("flags") or {}
    problems += _unknown("flags", flags, _FLAGS)
    problems += _unknown("flags.plugin", flags.get("plugin") or {}, _PLUGIN_FLAGS)
    problems += _unknown("flags.gfd", flags.get("gfd") or {}, _GFD_FLAGS)
    if flags.get("migStrategy") not in (None, "none", "single", "mixed"):
        problems.append("flags.migStrategy: none | single | mixed")
    resources = config.get("resources") or {}
    problems += _unknown("resources", resources, {"gpus", "mig"})
    for kind in ("gpus", "mig"):
        for i, item in enumerate(resources.get(kind) or []):
            # resources.go UnmarshalJSON: both fields are required
            if set(item) != {"pattern", "name"}:
                problems.append(f"resources.{kind}[{i}]: needs exactly pattern and name")
    sharing = config.get("sharing") or {}
    problems += _unknown("sharing", sharing, {"timeSlicing", "mps"})
    for key in ("timeSlicing", "mps"):
        if key not in sharing or not sharing[key]:
            continue  # "timeSlicing": {} is what the plugin logs after defaulting
        replicated = sharing[key]
        problems += _unknown(f"sharing.{key}", replicated, _REPLICATED)
        if not replicated.get("resources"):
            problems.append(f"sharing.{key}: no resources specified")
        for i, item in enumerate(replicated.get("resources") or []):
            problems += _unknown(f"sharing.{key}.resources[{i}]", item, _REPLICATED_RESOURCE)
            if not item.get("name"):
                problems.append(f"sharing.{key}.resources[{i}]: name is required")
            replicas = item.get("replicas")
            if not isinstance(replicas, int) or replicas < 2:
                problems.append(f"sharing.{key}.resources[{i}]: number of replicas must be >= 2")
            devices = item.get("devices", "all")
            if not (devices == "all" or isinstance(devices, int | list)):
                problems.append(f"sharing.{key}.resources[{i}].devices: all | count | list")
    return problems


def mig_parted_problems(config: dict[str, Any]) -> list[str]:
    problems = _unknown("config", config, {"version", "mig-configs"})
    if config.get("version") != "v1":
        problems.append("config.version: must be v1")
    for name, entries in (config.get("mig-configs") or {}).items():
        if not isinstance(entries, list):
            problems.append(f"mig-configs.{name}: a list of entries")
            continue
        for i, entry in enumerate(entries):
            where = f"mig-configs.{name}[{i}]"
            problems += _unknown(where, entry, {"devices", "device-filter", "mig-enabled", "mig-devices"})
            devices = entry.get("devices")
            if not (devices == "all" or isinstance(devices, list)):
                problems.append(f"{where}.devices: all | list of indices")
            if not isinstance(entry.get("mig-enabled"), bool):
                problems.append(f"{where}.mig-enabled: a boolean")
            mig_devices = entry.get("mig-devices", {})
            if not isinstance(mig_devices, dict) or not all(isinstance(v, int) for v in mig_devices.values()):
                problems.append(f"{where}.mig-devices: profile -> count")
    return problems
