"""Version conversion for resource.k8s.io: objects are stored as v1 and served in any served version.

The shapes that differ (from the v1beta1/v1alpha3 Go types and their conversion functions):
- ResourceSlice devices: v1beta1 and v1alpha3 wrap a device's fields in `basic`; v1alpha3 capacities
  are bare quantities where later versions have {value: quantity}.
- ResourceClaim(Template) requests: v1beta1 and v1alpha3 put deviceClassName, selectors,
  allocationMode, count, adminAccess and tolerations on the request itself; v1beta2 and v1 nest them
  under `exactly`.
v1beta2 has the v1 shape. Other kinds only change their apiVersion.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from kubesim.registry import ResourceInfo, split_api_version

_WRAPPED = ("v1beta1", "v1alpha3")
_EXACT_FIELDS = (
    "deviceClassName",
    "selectors",
    "allocationMode",
    "count",
    "adminAccess",
    "tolerations",
    "capacity",
)


def to_storage(info: ResourceInfo, obj: dict[str, Any], *, copy_obj: bool = True) -> dict[str, Any]:
    """The object in the storage version (a copy unless copy_obj=False)."""
    _, version = split_api_version(str(obj.get("apiVersion", "")))
    # A JSON round trip copies faster than deepcopy and turns YAML timestamps into strings.
    out = json.loads(json.dumps(obj, default=str)) if copy_obj else obj
    out["apiVersion"], out["kind"] = info.api_version, info.kind
    if version in _WRAPPED:
        _convert(info, out, version, up=True)
    return out


def from_storage(info: ResourceInfo, obj: dict[str, Any], version: str) -> dict[str, Any]:
    """A copy of the stored object as `version` shows it."""
    out = copy.deepcopy(obj)
    out["apiVersion"] = info.api_version_for(version)
    if version in _WRAPPED:
        _convert(info, out, version, up=False)
    return out


def _convert(info: ResourceInfo, obj: dict[str, Any], version: str, *, up: bool) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if info.plural == "resourceslices":
        spec["devices"] = [_device(d, version, up) for d in spec.get("devices") or [] if isinstance(d, dict)]
        if not spec["devices"]:
            del spec["devices"]
    elif info.plural == "resourceclaims":
        _claim_spec(spec, up)
    elif info.plural == "resourceclaimtemplates" and isinstance(spec.get("spec"), dict):
        _claim_spec(spec["spec"], up)


def _device(device: dict[str, Any], version: str, up: bool) -> dict[str, Any]:
    if up:
        basic = device.get("basic") or {}
        flat = {"name": device.get("name"), **basic}
        if version == "v1alpha3" and isinstance(flat.get("capacity"), dict):
            flat["capacity"] = {k: {"value": v} for k, v in flat["capacity"].items()}
        return {k: v for k, v in flat.items() if v is not None}
    inner = {k: v for k, v in device.items() if k != "name"}
    if version == "v1alpha3" and isinstance(inner.get("capacity"), dict):
        inner["capacity"] = {
            k: (v.get("value") if isinstance(v, dict) else v) for k, v in inner["capacity"].items()
        }
    return {"name": device.get("name"), "basic": inner}


def _claim_spec(spec: dict[str, Any], up: bool) -> None:
    devices = spec.get("devices")
    if not isinstance(devices, dict):
        return
    requests = []
    for req in devices.get("requests") or []:
        if not isinstance(req, dict):
            continue
        req = dict(req)
        if up:
            exact = {k: req.pop(k) for k in _EXACT_FIELDS if k in req}
            if exact and "firstAvailable" not in req:
                req["exactly"] = exact
        else:
            req.update(req.pop("exactly", None) or {})
        requests.append(req)
    if requests:
        devices["requests"] = requests
