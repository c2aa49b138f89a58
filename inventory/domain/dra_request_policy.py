"""A pending claim asking a capacity amount no device of its DeviceClass could ever give (KEP-5075).

The scheduler rounds a request's `capacity.requests` amount up per each shared device's request policy
(dra_capacity.round_request) and leaves the device out when the rounded amount is still outside the policy
(above validRange.max, among no validValues) or above the device's capacity; a device that does not
declare the capacity is left out too. When every device of the class is left out, the claim stays
pending for ever and nothing in the cluster says why: this flags it on the claim.

Sound, not complete: the class's devices are those of its driver, its CEL selectors and the request's
are not evaluated. Selectors only narrow the candidates, so a request none of them can meet is
certainly unmet; a device whose capacity is not known (one claim takes it whole, and the inventory
keeps no capacity for it) counts as able to give it, so nothing is flagged on a guess.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from inventory.domain.dra_capacity import (
    RequestPolicy,
    amount_text,
    round_request,
    shared_capacity_from_json,
)
from inventory.domain.dra_claims import DeviceRequestSpec, ResourceClaim
from inventory.domain.dra_devices import DraDevice
from inventory.domain.issues import ParseIssue, warning

__all__ = ["CapacityOffer", "unmet_capacity_issues"]

CODE = "dra.capacity.request_outside_policy"


@dataclass(frozen=True, slots=True)
class CapacityOffer:
    """What one device can give a capacity request: a shared device's capacities and request policies;
    ``capacity`` None for a device whose capacities are not known (it may give anything)."""

    capacity: Mapping[str, Decimal] | None
    policies: Mapping[str, RequestPolicy] = field(default_factory=dict)

    @classmethod
    def of(cls, device: DraDevice) -> CapacityOffer:
        """A parsed device: a device one claim takes whole is only filtered by its capacity."""
        policies = device.request_policies if device.allow_multiple_allocations else {}
        return cls(capacity=device.capacity, policies=policies)

    @classmethod
    def stored(cls, shared_capacity: Mapping[str, object]) -> CapacityOffer:
        """A device as the sync stores it (ShareableUnit.shared_capacity): {} is not known."""
        if not shared_capacity:
            return cls(capacity=None)
        capacity, policies = shared_capacity_from_json(shared_capacity)
        return cls(capacity=capacity, policies=policies)

    def gives(self, name: str, amount: Decimal) -> bool:
        if self.capacity is None:
            return True
        if name not in self.capacity:
            return False
        policy = self.policies.get(name)
        if policy is None:
            return amount <= self.capacity[name]
        rounded = round_request(amount, policy)
        if rounded == policy.default:  # the default is allowed even off the range (as the scheduler)
            return True
        return policy.allows(rounded) and rounded <= self.capacity[name]

    def takes(self, name: str) -> str:
        """What it takes of a capacity, in words: "1Mi to 80Gi in steps of 1Mi", "up to 80Gi"."""
        if self.capacity is None:
            return "any amount"
        if name not in self.capacity:
            return f"no {name} (not declared)"
        policy = self.policies.get(name)
        top = self.capacity[name]
        if policy is None:
            return f"up to {amount_text(top)}"
        if policy.valid_values:
            return "one of " + ", ".join(amount_text(v) for v in policy.valid_values if v <= top)
        low = amount_text(policy.minimum or Decimal(0))
        high = amount_text(top if policy.maximum is None else min(policy.maximum, top))
        step = f" in steps of {amount_text(policy.step)}" if policy.step else ""
        return f"{low} to {high}{step}"


def _unmet(spec: DeviceRequestSpec, offers: Sequence[CapacityOffer], *, source: str) -> list[ParseIssue]:
    """Why no offer can give the spec's capacity requests; [] when one can (or nothing is known)."""
    wanted = dict(sorted(spec.capacity_requests.items()))
    if not wanted or not offers:
        return []
    if any(all(offer.gives(name, amount) for name, amount in wanted.items()) for offer in offers):
        return []
    issues = []
    for name, amount in wanted.items():
        if any(offer.gives(name, amount) for offer in offers):
            continue
        takes = sorted({offer.takes(name) for offer in offers})
        issues.append(
            warning(
                CODE,
                f"requests {amount_text(amount)} of {name}; {spec.device_class_name}'s devices take "
                + ", or ".join(takes),
                source=source,
            )
        )
    if not issues:  # each amount alone is given by some device, but no device gives them all
        asked = " and ".join(f"{amount_text(amount)} of {name}" for name, amount in wanted.items())
        issues.append(
            warning(CODE, f"requests {asked}; no device of {spec.device_class_name} gives all", source=source)
        )
    return issues


def unmet_capacity_issues(
    *, claim: ResourceClaim, offers: Mapping[str, Sequence[CapacityOffer]]
) -> tuple[ParseIssue, ...]:
    """A pending claim's requests that no device of their DeviceClass could ever give (``offers``:
    DeviceClass name -> what each of its devices can give; a class not there is not judged). A
    firstAvailable request is flagged only when none of its alternatives can be met. An allocated
    claim has none: whatever it asked was given."""
    if claim.allocated:
        return ()
    issues: list[ParseIssue] = []
    for request in claim.requests:
        specs = [request.exactly] if request.exactly is not None else list(request.first_available)
        found = []
        for spec in specs:
            if spec is None:
                continue
            name = request.name if spec is request.exactly else f"{request.name}/{spec.name}"
            unmet = _unmet(
                spec,
                offers.get(spec.device_class_name, ()),
                source=f"{claim.namespace}/{claim.name} request {name}",
            )
            if not unmet:
                break  # this alternative may be met: the request is not stuck on capacity
            found.extend(unmet)
        else:
            issues.extend(found)
    return tuple(issues)
