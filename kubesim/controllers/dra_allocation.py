"""The DRA allocator's core: which devices of a node's pools satisfy a ResourceClaim.

Rules kept from the real allocator (k8s.io/dynamic-resource-allocation/structured):
- only complete pools count: every slice of the newest generation seen (resourceSliceCount of them);
- a device matches when every DeviceClass selector and every request selector evaluates to true;
  an evaluation error is a mismatch;
- ExactCount takes `count` devices (default 1), All takes every matching device of the node and
  fails if one of them is taken; firstAvailable tries sub-requests in order ("<request>/<sub>");
- a device is allocated at most once, and devices consuming shared counters never exceed the set;
- constraints.matchAttribute: all devices of the listed requests share the attribute's value;
- a device with `allowMultipleAllocations` is shared: each allocation consumes part of its capacity
  (KEP-5075, consumable.py) and gets a `shareID` and `consumedCapacity`, until the capacity is used up.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kubesim.controllers.cache import Cache
from kubesim.controllers.cel_env import SelectorEvaluator, device_activation
from kubesim.scenarios import consumable
from kubesim.scenarios.quantity import parse_quantity

DeviceId = tuple[str, str, str]  # (driver, pool, device)
Amounts = dict[str, Fraction]  # counter name -> amount consumed
SetAmounts = dict[tuple[str, str], Fraction]  # (counter set, counter) -> amount consumed
# (request name, pool, device, capacity consumed: None unless the device is shared)
Chosen = tuple[str, "PoolView", str, Amounts | None]


def _fraction() -> Fraction:
    return Fraction(0)


def _amounts() -> Amounts:
    return defaultdict(_fraction)


def _merged_amounts(first: Amounts | dict[str, Fraction], second: Amounts) -> Amounts:
    merged: Amounts = defaultdict(_fraction, first)
    for key, value in second.items():
        merged[key] += value
    return merged


def _merged(first: SetAmounts, second: SetAmounts) -> SetAmounts:
    merged: SetAmounts = defaultdict(_fraction, first)
    for key, value in second.items():
        merged[key] += value
    return merged


@dataclass
class PoolView:
    driver: str
    name: str
    node: str | None
    generation: int
    devices: dict[str, dict[str, Any]] = field(default_factory=dict)
    counter_sets: dict[str, dict[str, Fraction]] = field(default_factory=dict)


@dataclass
class Slot:
    request: str  # name written to results: "<request>" or "<request>/<subrequest>"
    device_class: str
    selectors: list[str]
    count: int
    mode: str
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    capacity: dict[str, str] = field(default_factory=dict)  # capacity.requests (KEP-5075)


def request_alternatives(request: dict[str, Any]) -> list[Slot]:
    """The ways to satisfy one request of a v1 claim, in preference order (legacy flat shape accepted)."""
    name = request.get("name", "")
    if request.get("firstAvailable"):
        return [_slot(f"{name}/{sub.get('name', '')}", sub) for sub in request["firstAvailable"]]
    return [_slot(name, request.get("exactly") or request)]


def _slot(name: str, spec: dict[str, Any]) -> Slot:
    selectors = [s["cel"]["expression"] for s in spec.get("selectors") or [] if s.get("cel")]
    return Slot(
        request=name,
        device_class=spec.get("deviceClassName", ""),
        selectors=selectors,
        count=int(spec.get("count") or 1),
        mode=spec.get("allocationMode") or "ExactCount",
        tolerations=[t for t in spec.get("tolerations") or [] if isinstance(t, dict)],
        capacity=consumable.requested(spec),
    )


_BLOCKING = ("NoSchedule", "NoExecute")


def _tolerates(toleration: dict[str, Any], taint: dict[str, Any]) -> bool:
    """DeviceToleration matching (KEP-5055): an empty effect tolerates every effect; Exists with no key
    tolerates every taint; Equal (the default) needs key and value equal."""
    if toleration.get("effect") not in (None, "", taint.get("effect")):
        return False
    if toleration.get("operator") == "Exists":
        return not toleration.get("key") or toleration.get("key") == taint.get("key")
    return toleration.get("key") == taint.get("key") and (toleration.get("value") or "") == (
        taint.get("value") or ""
    )


def _kept_off(taints: list[dict[str, Any]], tolerations: list[dict[str, Any]]) -> bool:
    """A NoSchedule or NoExecute taint no toleration of the request tolerates keeps the device off."""
    return any(
        t.get("effect") in _BLOCKING and not any(_tolerates(tol, t) for tol in tolerations) for t in taints
    )


def _attribute(device: dict[str, Any], driver: str, qualified: str) -> Any:
    domain, _, short = qualified.rpartition("/")
    attributes = device.get("attributes") or {}
    value = attributes.get(qualified) or (attributes.get(short) if domain == driver else None)
    return None if value is None else next(iter(value.values()))


def _relevant(expression: str, device: dict[str, Any]) -> tuple[Any, ...]:
    """The attribute and capacity values an expression can see, by name: its result depends on nothing else.

    Thousands of devices share a model and profile and differ only in ids the selectors never read, so
    keying results on this (not on the device name) evaluates each expression a handful of times per
    cluster instead of once per device: cel-python takes about a millisecond per evaluation.
    """
    values: list[Any] = []
    for section in ("attributes", "capacity"):
        for name, value in sorted((device.get(section) or {}).items()):
            if name.rpartition("/")[2] in expression:
                values.append((section, name, tuple(sorted(value.items()))))
    return tuple(values)


class Allocator:
    """Allocation state of the cluster for one controller pass, rebuilt from the cache."""

    def __init__(
        self,
        cache: Cache,
        evaluator: SelectorEvaluator,
        match_cache: dict[tuple[str, str, str, str, int], bool] | None = None,
    ) -> None:
        self.cache = cache
        self.evaluator = evaluator
        self.pools: dict[tuple[str, str], PoolView] = self._complete_pools()
        self.pools_by_node: dict[str, list[PoolView]] = defaultdict(list)
        for pool in self.pools.values():
            if pool.node:
                self.pools_by_node[pool.node].append(pool)
        self.allocated: set[DeviceId] = set()
        # What the allocations of each shared device consume of its capacities (KEP-5075).
        self.shares_used: dict[DeviceId, Amounts] = defaultdict(_amounts)
        self.counters_used: dict[tuple[str, str, str], Amounts] = defaultdict(_amounts)
        # Selector results per device and pool generation; callers keep it across passes, since
        # evaluating CEL in Python costs about a millisecond and a device's attributes only change
        # with a new pool generation.
        self._match_cache: dict[tuple[Any, ...], Any] = match_cache if match_cache is not None else {}
        self.errors: list[str] = []
        for claim in cache.values("resourceclaims"):
            for result in (
                ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", [])
            ):
                self.take_result(result)

    def _complete_pools(self) -> dict[tuple[str, str], PoolView]:
        slices: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for rs in self.cache.values("resourceslices"):
            spec = rs.get("spec") or {}
            slices[(spec.get("driver", ""), (spec.get("pool") or {}).get("name", ""))].append(spec)
        pools = {}
        for (driver, name), specs in slices.items():
            newest = max(int(s["pool"].get("generation", 0)) for s in specs)
            current = [s for s in specs if int(s["pool"].get("generation", 0)) == newest]
            if len(current) != int(current[0]["pool"].get("resourceSliceCount", 1)):
                continue  # incomplete: the driver is still publishing this generation
            view = PoolView(driver, name, current[0].get("nodeName"), newest)
            for spec in current:
                for device in spec.get("devices") or []:
                    view.devices[device["name"]] = device
                for counter_set in spec.get("sharedCounters") or []:
                    view.counter_sets[counter_set["name"]] = {
                        k: parse_quantity(v["value"]) for k, v in counter_set["counters"].items()
                    }
            pools[(driver, name)] = view
        return pools

    def taints(self, pool: PoolView, name: str, device: dict[str, Any]) -> list[dict[str, Any]]:
        """The device's own taints and those of DeviceTaintRules naming it (driver, pool, device)."""
        taints = [t for t in device.get("taints") or [] if isinstance(t, dict)]
        for rule in self.cache.values("devicetaintrules"):
            spec = rule.get("spec") or {}
            selector = spec.get("deviceSelector")
            if not isinstance(selector, dict) or not isinstance(spec.get("taint"), dict):
                continue  # without a selector a rule matches no device
            wanted = (selector.get("driver"), selector.get("pool"), selector.get("device"))
            if all(
                w in (None, "", have) for w, have in zip(wanted, (pool.driver, pool.name, name), strict=True)
            ):
                taints.append(spec["taint"])
        return taints

    def device(self, device_id: DeviceId) -> dict[str, Any] | None:
        pool = self.pools.get((device_id[0], device_id[1]))
        return pool.devices.get(device_id[2]) if pool else None

    def take_result(self, result: dict[str, Any]) -> None:
        """Mark an allocation result taken: a share adds what it consumes, any other the whole device."""
        device_id = (result["driver"], result["pool"], result["device"])
        device = self.device(device_id)
        if device is not None and consumable.is_shared(device):
            used = self.shares_used[device_id]
            for name, amount in self._share_of(device, result).items():
                used[name] += amount
        else:
            self.take(device_id)

    def release_result(self, result: dict[str, Any]) -> None:
        device_id = (result["driver"], result["pool"], result["device"])
        device = self.device(device_id)
        if device is not None and consumable.is_shared(device):
            used = self.shares_used[device_id]
            for name, amount in self._share_of(device, result).items():
                used[name] -= amount
        else:
            self.release(device_id)

    @staticmethod
    def _share_of(device: dict[str, Any], result: dict[str, Any]) -> consumable.Amounts:
        """What a result holds of a shared device: its consumedCapacity; a result written without one
        (loaded objects) holds what a request naming no capacity would."""
        return consumable.result_consumed(result) or consumable.consumption(device, {}) or {}

    def take(self, device_id: DeviceId) -> None:
        self.allocated.add(device_id)
        pool = self.pools.get((device_id[0], device_id[1]))
        device = pool.devices.get(device_id[2]) if pool else None
        for consumed in (device or {}).get("consumesCounters") or []:
            used = self.counters_used[(device_id[0], device_id[1], consumed["counterSet"])]
            for counter, value in consumed["counters"].items():
                used[counter] += parse_quantity(value["value"])

    def release(self, device_id: DeviceId) -> None:
        if device_id not in self.allocated:
            return
        self.allocated.discard(device_id)
        pool = self.pools.get((device_id[0], device_id[1]))
        device = pool.devices.get(device_id[2]) if pool else None
        for consumed in (device or {}).get("consumesCounters") or []:
            used = self.counters_used[(device_id[0], device_id[1], consumed["counterSet"])]
            for counter, value in consumed["counters"].items():
                used[counter] -= parse_quantity(value["value"])

    def counters_fit(self, pool: PoolView, device: dict[str, Any], extra: SetAmounts) -> bool:
        for consumed in device.get("consumesCounters") or []:
            available = pool.counter_sets.get(consumed["counterSet"])
            if available is None:
                return False
            used = self.counters_used[(pool.driver, pool.name, consumed["counterSet"])]
            for counter, value in consumed["counters"].items():
                want = parse_quantity(value["value"])
                have = available.get(counter, Fraction(0))
                if used[counter] + extra.get((consumed["counterSet"], counter), Fraction(0)) + want > have:
                    return False
        return True

    def _matching(self, pool: PoolView, slot: Slot) -> list[str]:
        """Names of the pool's devices that match the slot's class and selectors, whether free or not."""
        key = ("candidates", pool.driver, pool.name, pool.generation, slot.device_class, *slot.selectors)
        cached = self._match_cache.get(key)
        if cached is None:
            cached = [name for name in sorted(pool.devices) if self.matches(pool, pool.devices[name], slot)]
            self._match_cache[key] = cached
        return list(cached)

    def matches(self, pool: PoolView, device: dict[str, Any], slot: Slot) -> bool:
        device_class = self.cache.get("deviceclasses", None, slot.device_class)
        if device_class is None:
            return False
        expressions = [
            s["cel"]["expression"]
            for s in (device_class.get("spec") or {}).get("selectors") or []
            if s.get("cel")
        ]
        expressions += slot.selectors
        activation: dict[str, Any] | None = None
        for expression in expressions:
            key = ("match", expression, pool.driver, _relevant(expression, device))
            result = self._match_cache.get(key)
            if result is None:
                if activation is None:
                    activation = device_activation(pool.driver, device)
                result, error = self.evaluator.matches(expression, activation)
                if error:
                    self.errors.append(f"{slot.device_class}: {error}")
                self._match_cache[key] = result
            if not result:
                return False
        return True

    def allocate(self, claim: dict[str, Any], node: str) -> list[dict[str, Any]] | None:
        """Results for `claim` from the pools of `node`, or None. Does not mark anything taken."""
        devices_spec = (claim.get("spec") or {}).get("devices") or {}
        requests = devices_spec.get("requests") or []
        constraints = [c for c in devices_spec.get("constraints") or [] if c.get("matchAttribute")]
        pools = self.pools_by_node.get(node, [])
        if not pools:
            return None
        chosen = self._solve(requests, constraints, pools, 0, [], defaultdict(_fraction))
        if chosen is None:
            return None
        results: list[dict[str, Any]] = []
        for request, pool, device, consumed in chosen:
            result: dict[str, Any] = {
                "request": request,
                "driver": pool.driver,
                "pool": pool.name,
                "device": device,
            }
            if consumed is not None:
                result["shareID"] = consumable.share_id(claim, request, (pool.driver, pool.name, device))
                result["consumedCapacity"] = {k: consumable.quantity_text(v) for k, v in consumed.items()}
            results.append(result)
        return results

    def _solve(
        self,
        requests: list[dict[str, Any]],
        constraints: list[dict[str, Any]],
        pools: list[PoolView],
        index: int,
        chosen: list[Chosen],
        extra: SetAmounts,
    ) -> list[Chosen] | None:
        if index == len(requests):
            return chosen
        for slot in request_alternatives(requests[index]):
            picked = self._fill(slot, requests[index].get("name", ""), constraints, pools, chosen, extra)
            if picked is None:
                continue
            added, added_extra = picked
            result = self._solve(
                requests, constraints, pools, index + 1, chosen + added, _merged(extra, added_extra)
            )
            if result is not None:
                return result
        return None

    def _fill(
        self,
        slot: Slot,
        request_name: str,
        constraints: list[dict[str, Any]],
        pools: list[PoolView],
        chosen: list[Chosen],
        extra: SetAmounts,
    ) -> tuple[list[Chosen], SetAmounts] | None:
        in_claim = {(pool.driver, pool.name, device) for _, pool, device, _ in chosen}
        # What this claim's earlier requests already consume of shared devices.
        claim_shares: dict[DeviceId, Amounts] = defaultdict(_amounts)
        for _, chosen_pool, chosen_name, earlier in chosen:
            for capacity, amount in (earlier or {}).items():
                claim_shares[(chosen_pool.driver, chosen_pool.name, chosen_name)][capacity] += amount
        candidates = []
        for pool in sorted(pools, key=lambda p: (p.driver, p.name)):
            for name in self._matching(pool, slot):
                device = pool.devices[name]
                # A device tainted NoSchedule/NoExecute is not a candidate unless the request tolerates it.
                if not _kept_off(self.taints(pool, name, device), slot.tolerations):
                    candidates.append((pool, name, device))
        if slot.mode == "All":
            if not candidates or any(
                (p.driver, p.name, n) in self.allocated or (p.driver, p.name, n) in in_claim
                for p, n, _ in candidates
            ):
                return None
            wanted = len(candidates)
        else:
            wanted = slot.count
        # Constraints that apply to this request, with values fixed by devices chosen earlier.
        applicable = [c for c in constraints if not c.get("requests") or request_name in c["requests"]]
        picked: list[Chosen] = []
        picked_extra: SetAmounts = defaultdict(_fraction)
        fixed: dict[str, Any] = {}
        for constraint in applicable:
            attribute = constraint["matchAttribute"]
            for request, chosen_pool, chosen_name, _ in chosen:
                if not constraint.get("requests") or request.split("/")[0] in constraint["requests"]:
                    fixed[attribute] = _attribute(
                        chosen_pool.devices[chosen_name], chosen_pool.driver, attribute
                    )
                    break
        for pool, name, device in candidates:
            if len(picked) == wanted:
                break
            device_id = (pool.driver, pool.name, name)
            if any(device_id == (p.driver, p.name, n) for _, p, n, _ in picked):
                continue
            share: Amounts | None = None
            if consumable.is_shared(device):
                # Shared: another claim's share does not keep it off, only what is left of its capacity.
                share = consumable.consumption(device, slot.capacity)
                if share is None:
                    continue
                used = _merged_amounts(self.shares_used.get(device_id, {}), claim_shares.get(device_id, {}))
                if not consumable.fits(device, used, share):
                    continue
            elif (
                device_id in self.allocated
                or device_id in in_claim
                or not consumable.within_capacity(device, slot.capacity)
            ):
                continue
            values = {
                c["matchAttribute"]: _attribute(device, pool.driver, c["matchAttribute"]) for c in applicable
            }
            if any(v is None or (k in fixed and fixed[k] != v) for k, v in values.items()):
                continue
            if not self.counters_fit(pool, device, _merged(extra, picked_extra)):
                continue
            fixed.update(values)
            picked.append((slot.request, pool, name, share))
            for consumed in device.get("consumesCounters") or []:
                for counter, value in consumed["counters"].items():
                    picked_extra[(consumed["counterSet"], counter)] += parse_quantity(value["value"])
        if len(picked) < wanted:
            return None
        return picked, picked_extra
