"""HAMi node annotations: the device register and the scheduler/plugin handshake.

`hami.io/node-nvidia-register` comes in two live encodings (realworld/hami-node-annotations.yaml):
  legacy: "<dev>:<dev>:" with 7 or 9 comma fields per device
          uuid,splitCount,devmem MiB,devcore,type,numa,healthy[,index,mode]
  JSON:   [{"id":..,"count":..,"devmem":..,"devcore":..,"type":..,"numa":..,"mode":..,"health":..}]
          (Go omitempty: "numa":0 and "index":0 are left out, so absent means 0).
devmem already includes deviceMemoryScaling and devcore deviceCoreScaling (devcore 500 is real).
A `kubectl describe` copy truncates long values with "..."; such a record is reported, not guessed.

`hami.io/device-cordon` (HAMi's pkg/device/nvidia/device.go, DeviceCordonAnnotation): GPU UUIDs,
comma-separated, that the scheduler's Fit() skips for new pods while running ones stay; HAMi trims
spaces and skips empty entries, and so do we.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from inventory.domain.issues import ParseIssue, error, shorten, warning

__all__ = [
    "HAMI_DEVICE_CORDON_KEY",
    "HAMI_HANDSHAKE_KEYS",
    "HAMI_NVIDIA_REGISTER_KEY",
    "HamiDevice",
    "HamiHandshake",
    "HamiNodeRegistration",
    "HandshakeState",
    "RegisterEncoding",
    "parse_hami_device_cordon",
    "parse_hami_handshake",
    "parse_hami_node_register",
    "read_handshake",
]

HAMI_NVIDIA_REGISTER_KEY = "hami.io/node-nvidia-register"
HAMI_DEVICE_CORDON_KEY = "hami.io/device-cordon"
# The code writes the un-suffixed key for NVIDIA; the protocol docs show the per-vendor one.
HAMI_HANDSHAKE_KEYS = ("hami.io/node-handshake", "hami.io/node-handshake-nvidia")


class RegisterEncoding(StrEnum):
    LEGACY = "legacy"
    JSON = "json"
    EMPTY = "empty"


@dataclass(frozen=True, slots=True)
class HamiDevice:
    uuid: str
    split_count: int
    memory_mib: int  # scaled by deviceMemoryScaling
    cores: int  # percent, scaled by deviceCoreScaling (500 = 5x oversubscribed)
    type: str  # as registered: "NVIDIA-NVIDIA A100-PCIE-40GB"; resolve with gpu_models.resolve_gpu_model
    numa: int
    healthy: bool
    index: int | None = None  # only in the 9-field legacy form and JSON
    mode: str | None = None  # "hami-core" | "mig" | "mps"


@dataclass(frozen=True, slots=True)
class HamiNodeRegistration:
    devices: tuple[HamiDevice, ...]
    encoding: RegisterEncoding
    complete: bool  # False when records were dropped (truncated copy, bad fields)
    issues: tuple[ParseIssue, ...]


def parse_hami_node_register(*, value: str | None, expect: str = "auto") -> HamiNodeRegistration:
    """Parse the register annotation; `expect="json"` reproduces a JSON-only reader (HAMi >= 2.5)."""
    source = f"annotation {HAMI_NVIDIA_REGISTER_KEY}"
    text = (value or "").strip()
    if not text:
        return HamiNodeRegistration((), RegisterEncoding.EMPTY, True, ())
    if text.startswith("[") or expect == "json":
        return _parse_json(text, source=source)
    return _parse_legacy(text, source=source)


def _parse_json(text: str, *, source: str) -> HamiNodeRegistration:
    try:
        decoded = json.loads(text)
    except json.JSONDecodeError as exc:
        # The words HAMi's json.Unmarshal uses: "invalid character 'G'" for a legacy string read as
        # JSON, "unexpected end of JSON input" for a value cut short.
        if exc.pos < len(text):
            what = f"invalid character {text[exc.pos]!r} looking for beginning of value"
        else:
            what = "unexpected end of JSON input"
        issue = error(
            "hami.register.invalid_json", f"{what} at offset {exc.pos}: {shorten(text)}", source=source
        )
        return HamiNodeRegistration((), RegisterEncoding.JSON, False, (issue,))
    if not isinstance(decoded, list):
        issue = error(
            "hami.register.invalid_json", f"expected a JSON list, got {type(decoded).__name__}", source=source
        )
        return HamiNodeRegistration((), RegisterEncoding.JSON, False, (issue,))
    devices: list[HamiDevice] = []
    issues: list[ParseIssue] = []
    for position, item in enumerate(decoded):
        device = _device_from_json(item)
        if device is None:
            issues.append(
                error("hami.register.bad_device", f"device #{position}: {shorten(item)}", source=source)
            )
        else:
            devices.append(device)
    return HamiNodeRegistration(tuple(devices), RegisterEncoding.JSON, not issues, tuple(issues))


def _json_int(item: Mapping[str, Any], key: str) -> int | None:
    value = item.get(key, 0)  # omitempty: absent numbers are zero
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _device_from_json(item: object) -> HamiDevice | None:
    if not isinstance(item, Mapping):
        return None
    uuid, dev_type = item.get("id"), item.get("type", "")
    count, memory, cores = _json_int(item, "count"), _json_int(item, "devmem"), _json_int(item, "devcore")
    numa, index = _json_int(item, "numa"), _json_int(item, "index")
    if not isinstance(uuid, str) or not uuid or not isinstance(dev_type, str):
        return None
    if count is None or memory is None or cores is None or numa is None or index is None:
        return None
    mode = item.get("mode")
    return HamiDevice(
        uuid=uuid,
        split_count=count,
        memory_mib=memory,
        cores=cores,
        type=dev_type,
        numa=numa,
        healthy=item.get("health") is True,
        index=index,
        mode=mode if isinstance(mode, str) and mode else None,
    )


def _parse_legacy(text: str, *, source: str) -> HamiNodeRegistration:
    devices: list[HamiDevice] = []
    issues: list[ParseIssue] = []
    truncated = text.endswith("...")
    records = [record for record in text.split(":") if record.strip()]
    for position, record in enumerate(records):
        if truncated and position == len(records) - 1:
            issues.append(
                error(
                    "hami.register.truncated",
                    f"value cut with '...' (kubectl describe?); last record dropped: {shorten(record)}",
                    source=source,
                )
            )
            break
        device, problem = _device_from_legacy(record.strip())
        if device is None:
            issues.append(error("hami.register.bad_device", f"device #{position}: {problem}", source=source))
        else:
            devices.append(device)
    return HamiNodeRegistration(tuple(devices), RegisterEncoding.LEGACY, not issues, tuple(issues))


def _device_from_legacy(record: str) -> tuple[HamiDevice | None, str]:
    fields = record.split(",")
    if len(fields) not in (7, 9):
        return None, f"expected 7 or 9 comma fields, got {len(fields)}: {shorten(record)}"
    numbers = [fields[1], fields[2], fields[3], fields[5]] + ([fields[7]] if len(fields) == 9 else [])
    if not all(number.strip().isdigit() for number in numbers):
        return None, f"non-numeric count/memory/cores/numa/index: {shorten(record)}"
    if fields[6] not in ("true", "false") or not fields[0].strip():
        return None, f"bad uuid or health field: {shorten(record)}"
    return (
        HamiDevice(
            uuid=fields[0].strip(),
            split_count=int(fields[1]),
            memory_mib=int(fields[2]),
            cores=int(fields[3]),
            type=fields[4],
            numa=int(fields[5]),
            healthy=fields[6] == "true",
            index=int(fields[7]) if len(fields) == 9 else None,
            mode=(fields[8].strip() or None) if len(fields) == 9 else None,
        ),
        "",
    )


class HandshakeState(StrEnum):
    REQUESTING = "Requesting"  # written by the scheduler every 15 s
    REPORTED = "Reported"  # the device plugin's answer
    DELETED = "Deleted"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class HamiHandshake:
    state: HandshakeState
    # UTC. Go time.String() ("+0000 UTC m=+2976.67") carries its zone; "Requesting_2024.05.20 11:44:46"
    # is the scheduler's local time with no zone, read as UTC and flagged by zone_assumed.
    at: datetime | None
    zone_assumed: bool
    raw: str
    issues: tuple[ParseIssue, ...] = ()


_HANDSHAKE_RE = re.compile(
    r"^(?P<state>Requesting|Reported|Deleted)[_ ]"
    r"(?P<date>\d{4}[-.]\d{2}[-.]\d{2}) (?P<time>\d{2}:\d{2}:\d{2})(?:\.(?P<frac>\d+))?"
    r"(?: (?P<offset>[+-]\d{4}))?"
)


def parse_hami_handshake(*, value: str | None) -> HamiHandshake:
    """Parse every handshake time format seen: Go time.String(), "Requesting_2006-01-02 15:04:05",
    and the dotted "Requesting_2024.05.20 11:44:46"."""
    raw = value or ""
    match = _HANDSHAKE_RE.match(raw.strip())
    if match is None:
        issue = warning(
            "hami.handshake.unparsed", f"unrecognised handshake {shorten(raw)}", source="handshake"
        )
        return HamiHandshake(HandshakeState.UNKNOWN, None, False, raw, (issue,))
    micro = (match["frac"] or "0")[:6].ljust(6, "0")
    stamp = f"{match['date'].replace('.', '-')} {match['time']}.{micro}"
    offset = match["offset"]
    try:
        at = datetime.strptime(f"{stamp} {offset or '+0000'}", "%Y-%m-%d %H:%M:%S.%f %z").astimezone(UTC)
    except ValueError:  # right shape, impossible date ("2024-13-45")
        issue = warning("hami.handshake.bad_time", f"impossible time in {shorten(raw)}", source="handshake")
        return HamiHandshake(HandshakeState(match["state"]), None, False, raw, (issue,))
    return HamiHandshake(HandshakeState(match["state"]), at, offset is None, raw)


def read_handshake(annotations: Mapping[str, str]) -> HamiHandshake | None:
    """The NVIDIA handshake from a node's annotations, whichever of the two keys is set."""
    for key in HAMI_HANDSHAKE_KEYS:
        if key in annotations:
            return parse_hami_handshake(value=annotations[key])
    return None


def parse_hami_device_cordon(
    *, annotations: Mapping[str, Any], registered: frozenset[str] | None = None
) -> tuple[frozenset[str], tuple[ParseIssue, ...]]:
    """The GPU UUIDs HAMi's per-GPU cordon names, and issues: a UUID the register does not list
    (when ``registered`` is given) cordons nothing here and is flagged."""
    raw = annotations.get(HAMI_DEVICE_CORDON_KEY)
    if raw is None:
        return frozenset(), ()
    source = f"annotation {HAMI_DEVICE_CORDON_KEY}"
    if not isinstance(raw, str):
        return frozenset(), (error("hami.cordon.not_text", shorten(raw), source=source),)
    uuids = frozenset(part.strip() for part in raw.split(",") if part.strip())
    issues: tuple[ParseIssue, ...] = ()
    if registered is not None and (unknown := sorted(uuids - registered)):
        issues = (
            warning(
                "hami.cordon.unknown_gpu",
                f"cordons {', '.join(unknown)}, which HAMi did not register on this node",
                source=source,
            ),
        )
    return uuids, issues
