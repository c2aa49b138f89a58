"""Which metrics and labels carry per-share usage in one cluster's Prometheus, validated.

The defaults follow the shapes in realworld/metrics: DCGM exporter 2.x-4.8 names (4.9 renames fields
and units, so a cluster on it overrides the names and scales), HAMi's current (v2.9+) and legacy names,
and the label drift: ``exported_pod``/``exported_namespace`` behind kube-prometheus win over ``pod``/
``namespace`` (which then name the exporter), ``hostname`` (4.8.3+) or ``Hostname`` (older, sometimes
the exporter pod's name), pod labels absent or empty when a card is idle.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import Any

_METRIC = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
# An extra selector is matchers only (label="v", label=~"re", ...), never an expression.
_MATCHER = re.compile(r'^\s*[a-zA-Z_][a-zA-Z0-9_]*\s*(=|!=|=~|!~)\s*"(?:[^"\\]|\\.)*"\s*$')

DEFAULT_SAMPLE_BUDGET = 5_000_000  # DESIGN §10: each PromQL query reads at most this many samples
# XIDs after which NVIDIA's Xid catalogue and drain tooling take the card out of service until it is
# reset or its node rebooted (docs/slos.md, "XID errors"): uncorrectable/uncontained ECC (48, 94, 95,
# 140), row remapping/page retirement pending or failed (63, 64), internal micro-controller halt
# (61, 62), NVLink (74), fallen off the bus (79), GSP RPC failures (119, 120). Application faults
# (13, 31, 43, 45...) leave the card fit for the next workload and are not in the list.
DEFAULT_CRITICAL_XIDS = (48, 61, 62, 63, 64, 74, 79, 94, 95, 119, 120, 140)


@dataclass(frozen=True)
class MetricName:
    """One metric and the factor that turns its values into the meter's unit (ratio 0-1 for
    utilisation, MiB for memory, mJ for energy)."""

    name: str
    scale: float = 1.0


@dataclass(frozen=True)
class HamiMetric:
    """A HAMi monitor metric: per container and device, with its own label names."""

    name: str
    scale: float
    device_label: str
    pod_label: str
    namespace_label: str


@dataclass(frozen=True)
class SourceConfig:
    scrape_interval_seconds: int = 60
    sample_budget: int = DEFAULT_SAMPLE_BUDGET
    retention_hours: int = 15 * 24  # Prometheus' default retention: past it an hour cannot improve
    timeout_seconds: int = 30
    selector: tuple[str, ...] = ()  # extra matchers for this cluster, e.g. cluster="east"
    # Utilisation: the first metric a series has wins (PROF_GR_ENGINE_ACTIVE, else GPU_UTIL %).
    utilisation: tuple[MetricName, ...] = (
        MetricName("DCGM_FI_PROF_GR_ENGINE_ACTIVE"),
        MetricName("DCGM_FI_DEV_GPU_UTIL", 0.01),
    )
    memory: tuple[MetricName, ...] = (MetricName("DCGM_FI_DEV_FB_USED"),)  # MiB
    energy: tuple[MetricName, ...] = (MetricName("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"),)  # mJ
    # The last XID code a card reported (0: none since DCGM started); read for the gpu_health SLI.
    xid: tuple[MetricName, ...] = (MetricName("DCGM_FI_DEV_XID_ERRORS"),)
    critical_xids: tuple[int, ...] = DEFAULT_CRITICAL_XIDS
    gpu_index_label: str = "gpu"  # matches a card the inventory knows by node and index only
    uuid_label: str = "UUID"  # the physical card (for MIG samples, the parent)
    gpu_instance_label: str = "GPU_I_ID"
    profile_label: str = "GPU_I_PROFILE"
    host_labels: tuple[str, ...] = ("hostname", "Hostname", "node")
    pod_labels: tuple[str, ...] = ("exported_pod", "pod")
    namespace_labels: tuple[str, ...] = ("exported_namespace", "namespace")
    hami_utilisation: tuple[HamiMetric, ...] = (
        HamiMetric("hami_container_device_utilization_ratio", 1.0, "device_uuid", "pod", "namespace"),
        HamiMetric("Device_utilization_desc_of_container", 0.01, "deviceuuid", "podname", "podnamespace"),
    )
    hami_memory: tuple[HamiMetric, ...] = (  # bytes
        HamiMetric("hami_vgpu_memory_used_bytes", 1.0, "device_uuid", "pod", "namespace"),
        HamiMetric("Device_memory_desc_of_container", 1.0, "deviceuuid", "podname", "podnamespace"),
    )
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def points_per_hour(self) -> int:
        return 3600 // self.scrape_interval_seconds


class ConfigInvalid(ValueError):
    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field = field_name
        self.message = message


def _metric(value: Any, where: str) -> MetricName:
    if isinstance(value, str):
        value = {"name": value}
    if not isinstance(value, dict) or not _METRIC.match(str(value.get("name", ""))):
        raise ConfigInvalid(where, "a metric is {name, scale} with a Prometheus metric name")
    scale = _scale(value.get("scale", 1.0), where)
    return MetricName(str(value["name"]), scale)


def _scale(value: Any, where: str) -> float:
    try:
        scale = float(value)
    except (TypeError, ValueError):
        raise ConfigInvalid(where, "scale must be a number") from None
    if not scale > 0:
        raise ConfigInvalid(where, "scale must be positive")
    return scale


def _label(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _LABEL.match(value):
        raise ConfigInvalid(where, f"{value!r} is not a Prometheus label name")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise ConfigInvalid(where, "must be a non-empty list")
    return value


def _int(value: Any, where: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigInvalid(where, f"must be a whole number from {low} to {high}")
    return value


def parse_config(raw: dict[str, Any] | None) -> SourceConfig:
    """A SourceConfig from stored JSON: missing keys take the defaults, unknown keys are refused."""
    raw = dict(raw or {})
    known = {f.name for f in fields(SourceConfig)} - {"extra"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigInvalid(unknown[0], "unknown setting")
    base = SourceConfig()
    kw: dict[str, Any] = {}
    if "scrape_interval_seconds" in raw:
        step = _int(raw["scrape_interval_seconds"], "scrape_interval_seconds", 1, 3600)
        if 3600 % step:
            raise ConfigInvalid("scrape_interval_seconds", "must divide an hour")
        kw["scrape_interval_seconds"] = step
    if "sample_budget" in raw:
        kw["sample_budget"] = _int(raw["sample_budget"], "sample_budget", 1000, 1_000_000_000)
    if "retention_hours" in raw:
        kw["retention_hours"] = _int(raw["retention_hours"], "retention_hours", 1, 24 * 3650)
    if "timeout_seconds" in raw:
        kw["timeout_seconds"] = _int(raw["timeout_seconds"], "timeout_seconds", 1, 600)
    if "selector" in raw:
        if not isinstance(raw["selector"], list):
            raise ConfigInvalid("selector", "must be a list of matchers")
        for matcher in raw["selector"]:
            if not isinstance(matcher, str) or not _MATCHER.match(matcher):
                raise ConfigInvalid("selector", f'{matcher!r} is not a matcher like cluster="east"')
        kw["selector"] = tuple(m.strip() for m in raw["selector"])
    for name in ("utilisation", "memory", "energy", "xid"):
        if name in raw:
            kw[name] = tuple(_metric(v, name) for v in _list(raw[name], name))
    if "critical_xids" in raw:
        kw["critical_xids"] = tuple(
            _int(v, "critical_xids", 1, 65_535) for v in _list(raw["critical_xids"], "critical_xids")
        )
    for name in ("uuid_label", "gpu_instance_label", "profile_label", "gpu_index_label"):
        if name in raw:
            kw[name] = _label(raw[name], name)
    for name in ("host_labels", "pod_labels", "namespace_labels"):
        if name in raw:
            kw[name] = tuple(_label(v, name) for v in _list(raw[name], name))
    for name in ("hami_utilisation", "hami_memory"):
        if name in raw:
            items = []
            for v in _list(raw[name], name):
                if not isinstance(v, dict):
                    raise ConfigInvalid(
                        name, "each is {name, scale, device_label, pod_label, namespace_label}"
                    )
                m = _metric(v, name)
                items.append(
                    HamiMetric(
                        m.name,
                        m.scale,
                        _label(v.get("device_label", "device_uuid"), name),
                        _label(v.get("pod_label", "pod"), name),
                        _label(v.get("namespace_label", "namespace"), name),
                    )
                )
            kw[name] = tuple(items)
    return SourceConfig(**{**{f.name: getattr(base, f.name) for f in fields(base)}, **kw})


def config_as_json(config: SourceConfig) -> dict[str, Any]:
    """The config as JSON, every setting spelled out (what the admin page and the audit show)."""
    out: dict[str, Any] = {}
    for f in fields(config):
        if f.name == "extra":
            continue
        value = getattr(config, f.name)
        if isinstance(value, tuple):
            value = [v.__dict__.copy() if isinstance(v, MetricName | HamiMetric) else v for v in value]
        out[f.name] = value
    return out
