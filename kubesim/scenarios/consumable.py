"""Consumable capacity (KEP-5075, DRAConsumableCapacity): what one allocation consumes of a device that
allows multiple allocations, as the kube-scheduler's allocator works it out.

Rules kept from k8s.io/dynamic-resource-allocation/structured and the v1 API documentation:
- every capacity the device declares is consumed, and named in the result's `consumedCapacity`, even
  when the amount is zero;
- a capacity the request names is rounded up per the capacity's `requestPolicy`: below
  `validRange.min` to min, then up to the next min + n * step; with `validValues`, up to the smallest
  value not below it; without a policy the requested amount is used as it is;
- a capacity the request does not name consumes the policy's `default`, or the whole capacity value
  when the capacity has no policy (or a policy without a default);
- an amount outside the policy (above validRange.max, off the step, not among validValues, unless it is
  the default) leaves the device out; so does a request naming a capacity the device does not declare;
- the sum of all allocations' consumption never exceeds the capacity's value.
A device without `allowMultipleAllocations` is not consumed in part: a capacity request is then only a
filter (the device must declare at least that much).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from kubesim.scenarios.quantity import parse_quantity

__all__ = [
    "Amounts",
    "consumption",
    "fits",
    "is_shared",
    "quantity_text",
    "requested",
    "result_consumed",
    "share_id",
    "within_capacity",
]

Amounts = dict[str, Fraction]
_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
# shareIDs are UUIDs the scheduler makes; kubesim derives them from the claim and device so a run with
# the same seed writes the same objects.
_SHARE_NAMESPACE = uuid.UUID("5075c0de-0000-4000-8000-00000000d2a0")


def is_shared(device: Mapping[str, Any]) -> bool:
    return device.get("allowMultipleAllocations") is True


def requested(spec: Mapping[str, Any]) -> dict[str, str]:
    """A request's `capacity.requests` (exactly or a firstAvailable sub-request)."""
    raw = (spec.get("capacity") or {}).get("requests") or {}
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


def _policy_amount(value: Fraction, policy: Mapping[str, Any]) -> Fraction:
    valid_range = policy.get("validRange") or {}
    if valid_range.get("min") is not None:
        low = parse_quantity(valid_range["min"])
        if value < low:
            return low
        if valid_range.get("step") is None:
            return value
        step = parse_quantity(valid_range["step"])
        steps = -((low - value) // step)  # ceil((value - low) / step)
        return low + step * steps
    values = sorted(parse_quantity(v) for v in policy.get("validValues") or [])
    return next((v for v in values if value <= v), value)


def _violates(amount: Fraction, policy: Mapping[str, Any]) -> bool:
    if policy.get("default") is not None and amount == parse_quantity(policy["default"]):
        return False
    valid_range = policy.get("validRange")
    if valid_range:
        if valid_range.get("max") is not None and amount > parse_quantity(valid_range["max"]):
            return True
        if valid_range.get("step") is not None:
            low = parse_quantity(valid_range.get("min") or 0)
            return (amount - low) % parse_quantity(valid_range["step"]) != 0
        return False
    values = policy.get("validValues") or []
    return bool(values) and amount not in {parse_quantity(v) for v in values}


def consumption(device: Mapping[str, Any], wanted: Mapping[str, str]) -> Amounts | None:
    """What one allocation of `device` consumes of each capacity it declares; None when the request
    cannot be met by it at all (a capacity it does not declare, or an amount outside a policy)."""
    capacity = device.get("capacity") or {}
    if any(name not in capacity for name in wanted):
        return None
    consumed: Amounts = {}
    for name, entry in capacity.items():
        policy = entry.get("requestPolicy") or {}
        if name in wanted:
            amount = parse_quantity(wanted[name])
            amount = _policy_amount(amount, policy) if policy else amount
        elif policy.get("default") is not None:
            amount = parse_quantity(policy["default"])
        else:
            amount = parse_quantity(entry["value"])
        if policy and _violates(amount, policy):
            return None
        consumed[name] = amount
    return consumed


def fits(device: Mapping[str, Any], used: Mapping[str, Fraction], consumed: Mapping[str, Fraction]) -> bool:
    capacity = device.get("capacity") or {}
    return all(
        used.get(name, Fraction(0)) + amount <= parse_quantity(capacity[name]["value"])
        for name, amount in consumed.items()
    )


def within_capacity(device: Mapping[str, Any], wanted: Mapping[str, str]) -> bool:
    """A device that is not shared meets a capacity request when it declares at least that much."""
    capacity = device.get("capacity") or {}
    return all(
        name in capacity and parse_quantity(amount) <= parse_quantity(capacity[name]["value"])
        for name, amount in wanted.items()
    )


def quantity_text(value: Fraction) -> str:
    """A quantity as resource.Quantity prints a BinarySI value: "20Gi", "1536Ki", "0", "3"."""
    if value.denominator != 1:
        return f"{int(value * 1000)}m"
    whole = int(value)
    for suffix, size in _BINARY:
        if whole and whole % size == 0:
            return f"{whole // size}{suffix}"
    return str(whole)


def result_consumed(result: Mapping[str, Any]) -> Amounts:
    raw = result.get("consumedCapacity") or {}
    return {str(k): parse_quantity(v) for k, v in raw.items()}


def share_id(claim: Mapping[str, Any], request: str, device: tuple[str, str, str]) -> str:
    meta = claim.get("metadata") or {}
    key = "/".join((meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}", request, *device))
    return str(uuid.uuid5(_SHARE_NAMESPACE, key))
