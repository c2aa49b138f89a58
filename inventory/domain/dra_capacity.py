"""Consumable capacity (KEP-5075, resource.k8s.io/v1 from 1.34 behind DRAConsumableCapacity): a device
with ``allowMultipleAllocations: true`` is shared by several claims, each consuming part of its
capacity, within the ``requestPolicy`` of each capacity entry.

Shapes (kubernetes/api resource/v1 types.go; the NVIDIA driver's consumable_shares.go):
  device.capacity.<name> = {value, requestPolicy: {default, validValues[] | validRange {min, max, step}}}
  allocation result: {..., shareID, consumedCapacity: {<name>: <quantity>}}
The NVIDIA driver (ConsumableShares gate) publishes ``memory`` with a 1Mi step from 0 or 1Mi up to the
card's memory, and optionally ``shares`` (1..N, step 1).

A share's GE is what it consumes of the card (DESIGN §3): the device's GE times the dominant fraction
of its capacity consumed, max over the capacities named. What it consumes is the result's
`consumedCapacity` (the scheduler writes every capacity of the device there, zeros included); a
capacity the result does not name is worked out as the scheduler does (`scheduler_consumption`): the
request's amount rounded up per the policy, else the policy's default, else the whole capacity.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from gpuplatform.quantity import QuantityError, format_binary, format_decimal, parse_quantity
from inventory.domain.issues import ParseIssue, warning
from inventory.domain.raw_fields import as_list, as_map

__all__ = [
    "RequestPolicy",
    "amount_text",
    "consumed_issues",
    "effective_consumption",
    "parse_consumed",
    "parse_request_policies",
    "round_request",
    "scheduler_consumption",
    "share_fraction",
    "shared_capacity_from_json",
    "shared_capacity_json",
]


@dataclass(frozen=True, slots=True)
class RequestPolicy:
    default: Decimal | None
    valid_values: tuple[Decimal, ...]
    minimum: Decimal | None
    maximum: Decimal | None
    step: Decimal | None

    def allows(self, amount: Decimal) -> bool:
        if self.valid_values:
            return amount in self.valid_values
        if self.minimum is not None and amount < self.minimum:
            return False
        if self.maximum is not None and amount > self.maximum:
            return False
        base = self.minimum or Decimal(0)
        return not (self.step and (amount - base) % self.step)

    def describe(self) -> str:
        if self.valid_values:
            return "one of " + ", ".join(str(v) for v in self.valid_values)
        low = "" if self.minimum is None else str(self.minimum)
        high = "" if self.maximum is None else str(self.maximum)
        step = f" in steps of {self.step}" if self.step else ""
        return f"{low}..{high}{step}"


def amount_text(value: Decimal) -> str:
    """A quantity as short as Kubernetes would print it: "80Gi", "1Mi", "4", "0"."""
    texts = []
    for form in (format_binary, format_decimal):
        with contextlib.suppress(QuantityError):  # below a nano-unit: not printable without loss
            texts.append(form(value))
    return min(texts, key=len) if texts else str(value)


def _quantity(raw: object, issues: list[ParseIssue], *, source: str, what: str) -> Decimal | None:
    if raw is None:
        return None
    try:
        return parse_quantity(raw)  # type: ignore[arg-type]
    except QuantityError as exc:
        issues.append(warning("dra.capacity.bad_policy", f"{what}: {exc}", source=source))
        return None


def parse_request_policies(raw: object, issues: list[ParseIssue], *, source: str) -> dict[str, RequestPolicy]:
    """The request policy of each capacity entry that has one."""
    policies: dict[str, RequestPolicy] = {}
    for name, entry in as_map(raw).items():
        policy = as_map(as_map(entry).get("requestPolicy"))
        if not policy:
            continue
        where = f"{source} capacity {name}"
        valid_range = as_map(policy.get("validRange"))
        values = [
            _quantity(v, issues, source=where, what="validValues") for v in as_list(policy.get("validValues"))
        ]
        policies[name] = RequestPolicy(
            default=_quantity(policy.get("default"), issues, source=where, what="default"),
            valid_values=tuple(sorted(v for v in values if v is not None)),
            minimum=_quantity(valid_range.get("min"), issues, source=where, what="validRange.min"),
            maximum=_quantity(valid_range.get("max"), issues, source=where, what="validRange.max"),
            step=_quantity(valid_range.get("step"), issues, source=where, what="validRange.step"),
        )
    return policies


def parse_consumed(raw: object, issues: list[ParseIssue], *, source: str) -> dict[str, Decimal]:
    consumed: dict[str, Decimal] = {}
    for name, value in as_map(raw).items():
        amount = _quantity(value, issues, source=source, what=f"consumedCapacity.{name}")
        if amount is not None:
            consumed[name] = amount
    return consumed


def round_request(amount: Decimal, policy: RequestPolicy) -> Decimal:
    """kube-scheduler's rounding (KEP-5075): up to validRange.min, then to min + n * step; with
    validValues to the smallest not below the amount (above all of them it is left as it is)."""
    if policy.minimum is not None:
        if amount < policy.minimum:
            return policy.minimum
        if not policy.step:
            return amount
        steps, rest = divmod(amount - policy.minimum, policy.step)  # both >= 0 here
        return policy.minimum + policy.step * (steps + (1 if rest else 0))
    return next((v for v in policy.valid_values if amount <= v), amount)


def scheduler_consumption(
    *,
    requested: Mapping[str, Decimal],
    capacity: Mapping[str, Decimal],
    policies: Mapping[str, RequestPolicy],
) -> dict[str, Decimal]:
    """What the scheduler takes of each capacity of a shared device for one request: the amount it
    names, rounded up per the policy; else the policy's default; else the whole capacity (KEP-5075:
    "If request is also unset, default is the full capacity value")."""
    consumed: dict[str, Decimal] = {}
    for name, value in capacity.items():
        policy = policies.get(name)
        if name in requested:
            consumed[name] = round_request(requested[name], policy) if policy else requested[name]
        elif policy is not None and policy.default is not None:
            consumed[name] = policy.default
        else:
            consumed[name] = value
    return consumed


def effective_consumption(
    *,
    consumed: Mapping[str, Decimal],
    requested: Mapping[str, Decimal],
    capacity: Mapping[str, Decimal],
    policies: Mapping[str, RequestPolicy],
) -> dict[str, Decimal]:
    """A share's consumption: the result's `consumedCapacity`, and for a capacity it leaves out (a
    result written without it) what the scheduler consumes for the claim's request."""
    return {**scheduler_consumption(requested=requested, capacity=capacity, policies=policies), **consumed}


def share_fraction(*, consumed: Mapping[str, Decimal], capacity: Mapping[str, Decimal]) -> Fraction | None:
    """The dominant fraction of the device a share consumes (max over the capacities it names that the
    device declares), at most 1; None when it names none the device declares."""
    fractions = [
        Fraction(amount) / Fraction(capacity[name])
        for name, amount in consumed.items()
        if name in capacity and capacity[name] > 0
    ]
    return min(max(fractions), Fraction(1)) if fractions else None


def consumed_issues(
    *,
    consumed: Mapping[str, Decimal],
    capacity: Mapping[str, Decimal],
    policies: Mapping[str, RequestPolicy],
    source: str,
) -> list[ParseIssue]:
    """A consumed amount outside its capacity's request policy, or above the capacity, or of a
    capacity the device does not declare: each flagged (the share still counts, capped at the card)."""
    issues: list[ParseIssue] = []
    for name, amount in sorted(consumed.items()):
        policy = policies.get(name)
        if name not in capacity:
            issues.append(
                warning(
                    "dra.capacity.undeclared",
                    f"consumes {name}={amount}, which the device does not declare",
                    source=source,
                )
            )
        elif policy is not None and not policy.allows(amount):
            issues.append(
                warning(
                    "dra.capacity.outside_policy",
                    f"consumes {name}={amount}, outside the request policy ({policy.describe()})",
                    source=source,
                )
            )
        elif amount > capacity[name]:
            issues.append(
                warning(
                    "dra.capacity.above_capacity",
                    f"consumes {name}={amount} of {capacity[name]}",
                    source=source,
                )
            )
    return issues


def _text(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def shared_capacity_json(
    *, capacity: Mapping[str, Decimal], policies: Mapping[str, RequestPolicy]
) -> dict[str, dict[str, object]]:
    """A shared device's capacities and their policies as stored on its unit (exact decimals as text)."""
    stored: dict[str, dict[str, object]] = {}
    for name, value in capacity.items():
        policy = policies.get(name)
        entry: dict[str, object] = {"value": str(value)}
        if policy is not None:
            entry.update(
                default=_text(policy.default),
                values=[str(v) for v in policy.valid_values],
                min=_text(policy.minimum),
                max=_text(policy.maximum),
                step=_text(policy.step),
            )
        stored[name] = entry
    return stored


def shared_capacity_from_json(
    stored: Mapping[str, object],
) -> tuple[dict[str, Decimal], dict[str, RequestPolicy]]:
    def number(value: object) -> Decimal | None:
        return None if value in (None, "") else Decimal(str(value))

    capacity: dict[str, Decimal] = {}
    policies: dict[str, RequestPolicy] = {}
    for name, raw in stored.items():
        entry = as_map(raw)
        capacity[name] = Decimal(str(entry.get("value", "0")))
        if "step" in entry or "values" in entry or "min" in entry:
            policies[name] = RequestPolicy(
                default=number(entry.get("default")),
                valid_values=tuple(Decimal(str(v)) for v in as_list(entry.get("values"))),
                minimum=number(entry.get("min")),
                maximum=number(entry.get("max")),
                step=number(entry.get("step")),
            )
    return capacity, policies
