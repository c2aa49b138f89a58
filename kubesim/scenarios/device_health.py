"""The "device-health" scenario's events: a GPU the NVIDIA DRA driver tainted on a health event and a GPU
HAMi cordons, both on devices nobody holds, so their whole card leaves free capacity.

Shapes (facts of the sources, tests/inventory_domain/fixtures/dra_taints/):
  - the driver's device_health.go: a fatal XID taints the device `gpu.nvidia.com/xid=<code>` with effect
    NoSchedule (a skipped XID with None); the API server stamps `timeAdded`.
  - HAMi's pkg/device/nvidia/device.go: node annotation `hami.io/device-cordon`, GPU UUIDs comma-separated.
"""

from __future__ import annotations

from typing import Any

from kubesim.scenarios.hami import ALLOCATED, DEVICE_CORDON, REGISTER, parse_register
from kubesim.scenarios.ids import Timestamps
from kubesim.scenarios.truth import Truth

XID_KEY = "gpu.nvidia.com/xid"
XID_FATAL = "79"  # "GPU has fallen off the bus"
CORDON = DEVICE_CORDON


def apply(objects: list[dict[str, Any]], truth: Truth, ts: Timestamps) -> None:
    """Taint one unheld whole GPU of the first DRA node and cordon one unheld GPU of the first HAMi node."""
    held_devices = {
        (r.get("pool"), r.get("device"))
        for o in objects
        if o.get("kind") == "ResourceClaim"
        for r in (((o.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
    }
    held_uuids = {
        part.split(",")[0]
        for o in objects
        if o.get("kind") == "Pod"
        for part in str(((o.get("metadata") or {}).get("annotations") or {}).get(ALLOCATED, ""))
        .replace(";", ":")
        .split(":")
        if part
    }
    _taint_first_free_gpu(objects, truth, held_devices, ts)
    _cordon_first_free_gpu(objects, truth, held_uuids)


def _taint_first_free_gpu(
    objects: list[dict[str, Any]], truth: Truth, held: set[tuple[Any, Any]], ts: Timestamps
) -> None:
    for obj in objects:
        if obj.get("kind") != "ResourceSlice":
            continue
        spec = obj["spec"]
        pool = spec["pool"]["name"]
        for device in spec.get("devices") or []:
            kind = ((device.get("attributes") or {}).get("type") or {}).get("string")
            if kind == "gpu" and (pool, device["name"]) not in held and "consumesCounters" not in device:
                taint = {"key": XID_KEY, "value": XID_FATAL, "effect": "NoSchedule", "timeAdded": ts.ago(600)}
                device["taints"] = [taint]
                truth.tainted_devices.append(
                    (spec.get("nodeName", ""), device["name"], f"{XID_KEY}={XID_FATAL}:NoSchedule")
                )
                return


def _cordon_first_free_gpu(objects: list[dict[str, Any]], truth: Truth, held: set[str]) -> None:
    for obj in objects:
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if obj.get("kind") != "Node" or REGISTER not in annotations:
            continue
        for device in parse_register(annotations[REGISTER]):
            if device.uuid not in held:
                annotations[CORDON] = device.uuid
                truth.cordoned_gpus.append((obj["metadata"]["name"], device.uuid))
                return
