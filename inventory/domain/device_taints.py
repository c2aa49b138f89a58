"""Device taints (KEP-5055) and why a device is not free capacity.

Shapes (tests/inventory/fixtures/dra_taints/): a ResourceSlice device's ``taints[]`` and a
DeviceTaintRule's ``spec.taint``, each ``{key, value?, effect, timeAdded?}``. Valid effects are None,
NoSchedule and NoExecute; the API says consumers must treat an unknown effect like None, so one is
read as harmless and flagged, never dropped and never a crash.

The NVIDIA DRA driver taints devices on health events (its device_health.go):
``gpu.nvidia.com/xid=<code>`` (NoSchedule for a fatal XID, None for one it skips),
``gpu.nvidia.com/gpu-lost`` (NoSchedule) and ``gpu.nvidia.com/unmonitored`` (None).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from inventory.domain.issues import ParseIssue, shorten, warning
from inventory.domain.raw_fields import as_list, as_map, as_str, dig

__all__ = [
    "BLOCKING_EFFECTS",
    "HEALTH_TAINT_KEYS",
    "DeviceTaint",
    "TaintRule",
    "blocking_reason",
    "parse_device_taint_rule",
    "parse_taints",
    "taints_from_json",
]

BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
KNOWN_EFFECTS = BLOCKING_EFFECTS | {"None"}
HEALTH_TAINT_KEYS = frozenset({"gpu.nvidia.com/xid", "gpu.nvidia.com/gpu-lost", "gpu.nvidia.com/unmonitored"})
MAX_TAINTS = 16  # the API's limit per device; more is garbage, not a taint list


@dataclass(frozen=True, slots=True)
class DeviceTaint:
    key: str
    value: str
    effect: str  # verbatim, also when unknown
    time_added: str  # RFC 3339 as served, "" when absent
    source: str = ""  # "" for the slice itself, "DeviceTaintRule <name>" for a rule's

    @property
    def known(self) -> bool:
        return self.effect in KNOWN_EFFECTS

    @property
    def blocks(self) -> bool:
        """Keeps new claims off the device (an unknown effect does not: it is read as None)."""
        return self.effect in BLOCKING_EFFECTS

    @property
    def health(self) -> bool:
        return self.key in HEALTH_TAINT_KEYS

    @property
    def label(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"

    def as_json(self) -> dict[str, str]:
        return {
            "key": self.key,
            "value": self.value,
            "effect": self.effect,
            "time_added": self.time_added,
            "source": self.source,
        }


def parse_taints(
    raw: object, issues: list[ParseIssue], *, source: str, rule: str = ""
) -> tuple[DeviceTaint, ...]:
    """The taints of one device (a list) or of a rule (one mapping in a list); bad ones are flagged."""
    entries = as_list(raw)
    if len(entries) > MAX_TAINTS:
        issues.append(
            warning(
                "dra.taint.too_many", f"{len(entries)} taints, the API allows {MAX_TAINTS}", source=source
            )
        )
    taints: list[DeviceTaint] = []
    for entry in entries[:MAX_TAINTS]:
        item = as_map(entry)
        key = as_str(item.get("key"))
        if not key:
            issues.append(warning("dra.taint.without_key", shorten(entry), source=source))
            continue
        effect = as_str(item.get("effect"))
        taint = DeviceTaint(
            key=key,
            value=as_str(item.get("value")),
            effect=effect,
            time_added=as_str(item.get("timeAdded")),
            source=f"DeviceTaintRule {rule}" if rule else "",
        )
        if not taint.known:
            issues.append(
                warning(
                    "dra.taint.unknown_effect",
                    f"taint {taint.label}: effect {effect!r} is not None, NoSchedule or NoExecute; "
                    "read as None (the device stays free capacity)",
                    source=source,
                )
            )
        if taint not in taints:  # the same taint twice is one taint
            taints.append(taint)
    return tuple(taints)


def blocking_reason(taints: Iterable[DeviceTaint]) -> str:
    """Why a device is not free capacity ("tainted by gpu.nvidia.com/xid=79:NoSchedule"), or ""."""
    blocking = sorted({t.label for t in taints if t.blocks})
    return f"tainted by {', '.join(blocking)}" if blocking else ""


def taints_from_json(rows: Iterable[Mapping[str, Any]]) -> tuple[DeviceTaint, ...]:
    """Taints as stored on a unit (DeviceTaint.as_json) back to objects."""
    return tuple(
        DeviceTaint(
            key=str(row.get("key") or ""),
            value=str(row.get("value") or ""),
            effect=str(row.get("effect") or ""),
            time_added=str(row.get("time_added") or ""),
            source=str(row.get("source") or ""),
        )
        for row in rows
        if isinstance(row, Mapping)
    )


@dataclass(frozen=True, slots=True)
class TaintRule:
    """A DeviceTaintRule (resource.k8s.io v1alpha3 1.33+, v1beta2 1.36, v1 1.37): one taint for the
    devices its selector names. Since 1.35 the selector has only driver, pool and device (its
    deviceClassName and CEL selectors were tombstoned); all unset matches every device."""

    name: str
    has_selector: bool  # "Without a selector, no devices are matched."
    driver: str
    pool: str
    device: str
    taint: DeviceTaint | None
    issues: tuple[ParseIssue, ...] = ()

    def matches(self, *, driver: str, pool: str, device: str) -> bool:
        return (
            self.has_selector
            and self.driver in ("", driver)
            and self.pool in ("", pool)
            and self.device in ("", device)
        )


def parse_device_taint_rule(*, obj: Mapping[str, Any]) -> TaintRule:
    name = as_str(dig(obj, "metadata", "name"))
    spec = as_map(obj.get("spec"))
    issues: list[ParseIssue] = []
    selector = spec.get("deviceSelector")
    chosen = as_map(selector)
    for gone in ("deviceClassName", "selectors"):
        if chosen.get(gone):
            issues.append(
                warning(
                    "dra.taint_rule.tombstoned_selector",
                    f"deviceSelector.{gone} is not served since Kubernetes 1.35; ignored",
                    source=name,
                )
            )
    taints = parse_taints(
        [spec.get("taint")] if spec.get("taint") is not None else [], issues, source=name, rule=name
    )
    if not taints:
        issues.append(warning("dra.taint_rule.without_taint", "spec.taint missing", source=name))
    return TaintRule(
        name=name,
        has_selector=isinstance(selector, Mapping),
        driver=as_str(chosen.get("driver")),
        pool=as_str(chosen.get("pool")),
        device=as_str(chosen.get("device")),
        taint=taints[0] if taints else None,
        issues=tuple(issues),
    )
