"""Prometheus as a usage source: the only module that talks to Prometheus (prometheus-api-client).

Every query aggregates on the server and returns one number per series group, never raw samples:
range functions over the raw hour (``sum_over_time``, ``count_over_time``, ``min_over_time``,
``increase``) where a series is one share's or one card's, and, for the per-card reading of
time-sliced and MPS cards, ``sum_over_time`` / ``count_over_time`` over a ``[1h:step]`` subquery of
``max by (...) (last_over_time(metric[step - 1ms]))``. Why those shapes:

- the hour is [H, H+1h): gauges are evaluated at H+1h-1ms, so the sample at H counts in this hour and
  the one at H+1h in the next, the same on Prometheus 2 (closed ranges) and 3 (left-open ranges);
- ``last_over_time`` over one scrape step never bridges a gap (the 5-minute lookback would), so missing
  samples show as missing points: coverage is seen / expected points, and a gap is a gap;
- ``>= 0`` drops NaN and negative samples (they count as missing, so the hour shows incomplete);
- ``max by`` collapses duplicates (two exporters, a restarted exporter's new ``instance``) without
  double counting, and ``A or B`` falls back per series (PROF_GR_ENGINE_ACTIVE, else GPU_UTIL);
- energy is a counter: ``increase`` over its raw hour counts resets as resets (never negative), and
  ``min_over_time`` finds a series with a negative sample, left out as for the gauges.

Chunks: a query's samples are about series x points of the hour. The inventory says how many series to
expect (cards, GPU instances, pods); when that times the points (times the names a family reads: two for
utilisation's fallback) passes the per-query budget, that family is queried in 16, 256, ... chunks by the
first hex digits of the card UUID (random, so even), plus one chunk for UUIDs that are not hex (redacted
or odd ones), so every series is read exactly once.

``read_xids`` answers the gpu_health SLI (docs/slos.md): per card, over one 5-minute bucket, the scrape
steps its DCGM XID gauge was seen at and the distinct codes it held (``count_values``), in the same
subquery shape; a bucket is small enough never to need chunks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

import requests
from prometheus_api_client import PrometheusConnect
from urllib3.util.retry import Retry

from gpuplatform.outbound.session import GuardedAdapter, failure_text
from metering.collection.config import HamiMetric, MetricName, SourceConfig
from metering.collection.readings import (
    CARD_SCOPE,
    ENERGY,
    HAMI_SCOPE,
    MEMORY,
    SHARE_SCOPE,
    UTILISATION,
    HourPlan,
    HourReadings,
    QueryCost,
    SeriesReading,
    UsageSourceError,
    XidReading,
    XidWindow,
)

HEX = "0123456789abcdef"
MAX_CHUNK_DIGITS = 3  # 4,096 chunks: past that the budget is too small for the fleet, said so
BYTES_PER_MIB = Decimal(1 << 20)


@dataclass(frozen=True)
class Chunk:
    name: str
    matcher: str  # a PromQL matcher on the card label, or "" for the whole hour in one go

    def on(self, label: str) -> str:
        return self.matcher.replace("@", label) if self.matcher else ""


def plan_chunks(*, expected_series: int, points: int, budget: int, variants: int = 2) -> list[Chunk]:
    """The fewest UUID-prefix chunks keeping series x points (x the names tried) under the budget."""
    estimate = max(1, expected_series) * points * variants
    digits = 0
    while estimate / 16**digits > budget and digits < MAX_CHUNK_DIGITS:
        digits += 1
    if digits == 0:
        return [Chunk("all", "")]
    chunks = []
    for n in range(16**digits):
        prefix = "".join(HEX[(n // 16**i) % 16] for i in reversed(range(digits)))
        pattern = "".join(f"[{c}{c.upper()}]" if c.isalpha() else c for c in prefix)
        chunks.append(Chunk(prefix, f'@=~"GPU-{pattern}.*"'))
    chunks.append(Chunk("other", f'@!~"GPU-[0-9a-fA-F]{{{digits}}}.*"'))
    return chunks


class PrometheusUsageSource:
    name = "prometheus"

    def __init__(self, *, url: str, config: SourceConfig, session: requests.Session | None = None) -> None:
        self.url = url.rstrip("/")
        self.config = config
        # Our own session, handed to the client: a short retry on 502/503/504 and connection errors
        # (a flapping server), then the hour fails and is retried by the beat job, not here for long.
        # The client mounts its retrying adapter on our session for this URL.
        self.session = session or requests.Session()
        base = self.session.get_adapter(self.url)
        # A read that timed out is not retried: a slow server would only be asked to be slow again.
        retry = Retry(
            total=2,
            read=False,
            backoff_factor=0.2,
            status_forcelist=(502, 503, 504),
            allowed_methods=None,
            raise_on_status=False,  # the last 5xx comes back as an answer, recorded with its status
        )
        self.client = PrometheusConnect(
            url=self.url, session=self.session, retry=retry, timeout=config.timeout_seconds
        )
        if isinstance(base, GuardedAdapter):
            # The client's plain adapter would connect anywhere: ours again, with the client's retry.
            self.session.mount(self.url, GuardedAdapter(base.policy, max_retries=retry))

    def ready(self) -> bool:
        try:
            return bool(self.client.check_prometheus_connection())
        except requests.RequestException:
            return False

    def read_hour(self, *, plan: HourPlan) -> HourReadings:
        cfg = self.config
        step = cfg.scrape_interval_seconds
        out = HourReadings(hour=plan.hour, step_seconds=step)
        end = plan.hour + timedelta(hours=1)
        gauge_at = end - timedelta(milliseconds=1)
        share_by = [
            cfg.uuid_label,
            cfg.gpu_instance_label,
            cfg.profile_label,
            *cfg.pod_labels,
            *cfg.namespace_labels,
            *cfg.host_labels,
        ]
        card_by = [cfg.uuid_label, cfg.gpu_instance_label, cfg.profile_label, *cfg.host_labels]
        energy_by = [cfg.uuid_label, *cfg.host_labels]
        # Each family is chunked on its own: only utilisation reads two names (``A or B``), so only
        # its queries carry twice the samples; memory and energy fit in fewer, larger chunks.
        for meter, metrics in ((UTILISATION, cfg.utilisation), (MEMORY, cfg.memory)):
            named = [(m.name, m.scale) for m in metrics]
            chunks, estimate = self._chunks(plan, len(metrics))
            for chunk in chunks:
                sel = self._matchers(chunk, cfg.uuid_label)
                self._raw(out, meter, SHARE_SCOPE, named, share_by, "max", sel, chunk, gauge_at, estimate)
                if plan.has_split_cards:
                    inner = self._dcgm(metrics, card_by, chunk)
                    self._gauge(out, meter, CARD_SCOPE, inner, chunk, gauge_at, estimate)
        # Energy is a counter read raw, like the gauges: ``increase`` counts a reset as one and, over
        # the hour's 60 samples, extrapolates to the hour's edges; the subquery form read the same
        # samples ~10x slower (one series walk per step).
        chunks, estimate = self._chunks(plan, len(cfg.energy))
        named = [(m.name, m.scale) for m in cfg.energy]
        for chunk in chunks:
            sel = self._matchers(chunk, cfg.uuid_label)
            self._raw(
                out,
                ENERGY,
                CARD_SCOPE,
                named,
                energy_by,
                "max",
                sel,
                chunk,
                gauge_at,
                estimate,
                total="increase",
            )
        for meter, hami in ((UTILISATION, cfg.hami_utilisation), (MEMORY, cfg.hami_memory)):
            for variant, metric in enumerate(hami):
                scale = metric.scale / float(BYTES_PER_MIB) if meter == MEMORY else metric.scale
                by = [metric.device_label, metric.pod_label, metric.namespace_label]
                named = [(metric.name, scale)]
                chunks, estimate = self._chunks(plan, 1)  # current and legacy names: queried apart
                for chunk in chunks:
                    sel = self._matchers(chunk, metric.device_label)
                    # Summed over a pod's containers: the pod is the share.
                    self._raw(
                        out,
                        meter,
                        HAMI_SCOPE,
                        named,
                        by,
                        "sum",
                        sel,
                        chunk,
                        gauge_at,
                        estimate,
                        variant,
                        metric,
                    )
        return out

    def read_xids(self, *, start: datetime, end: datetime, expected_cards: int = 0) -> XidWindow:
        """Each card's XID gauge over [start, end) (a few minutes: one query, never chunked): the steps
        it had a sample at, and the distinct codes it held, grouped by card UUID, index and host
        labels. Two queries, both aggregated on the server; a gap shows as fewer points. Raises
        UsageSourceError as read_hour does."""
        cfg = self.config
        step = cfg.scrape_interval_seconds
        seconds = int((end - start).total_seconds())
        if seconds <= 0 or seconds % step:
            raise UsageSourceError(
                f"the XID window of {seconds}s is not a whole number of {step}s scrape intervals"
            )
        out = XidWindow(start=start, end=end, step_seconds=step)
        at = end - timedelta(milliseconds=1)
        by = list(dict.fromkeys([cfg.uuid_label, cfg.gpu_index_label, *cfg.host_labels]))
        # max by: a duplicate exporter, and the err_code/err_msg labels dcgm-exporter 3.x+ adds (a new
        # series each time the code changes), collapse into one value per card and step.
        whole = Chunk("all", "")
        inner = self._dcgm(cfg.xid, by, whole)
        estimate = max(1, expected_cards) * (seconds // step) * len(cfg.xid)
        points = self._query(
            out, "xid/points", f"count_over_time(({inner})[{seconds}s:{step}s])", whole, at, estimate
        )
        group = ", ".join(by)
        codes = self._query(
            out,
            "xid/codes",
            f'count_over_time((count_values by ({group}) ("xid", {inner}))[{seconds}s:{step}s])',
            whole,
            at,
            estimate,
        )
        seen: dict[tuple[tuple[str, str], ...], set[int]] = {}
        for r in codes:
            labels = dict(r["metric"])
            code = _number(labels.pop("xid", ""))
            if code is None or code != code.to_integral_value():
                out.notes.append(f"xid/codes: a code that is not a whole number for {_key(labels)}")
                continue
            seen.setdefault(_key(labels), set()).add(int(code))
        for r in points:
            labels = r["metric"]
            count = _number(r["value"][1]) or Decimal(0)
            out.readings.append(
                XidReading(
                    uuid=labels.get(cfg.uuid_label, ""),
                    index=labels.get(cfg.gpu_index_label, ""),
                    hosts=tuple(labels[h] for h in cfg.host_labels if labels.get(h)),
                    points=int(count),
                    codes=frozenset(seen.get(_key(labels), ())),
                )
            )
        return out

    # -- query building --------------------------------------------------------------------------

    def _chunks(self, plan: HourPlan, names: int) -> tuple[list[Chunk], int]:
        """A family's chunks, and the samples each is expected to read (series x points x names)."""
        points = self.config.points_per_hour
        chunks = plan_chunks(
            expected_series=plan.expected_series,
            points=points,
            budget=self.config.sample_budget,
            variants=names,
        )
        per_chunk = max(1, plan.expected_series // max(1, len(chunks) - 1))
        return chunks, per_chunk * points * names

    def _matchers(self, chunk: Chunk, label: str) -> str:
        parts = [*self.config.selector]
        if chunk.matcher:
            parts.append(chunk.on(label))
        return ",".join(parts)

    def _window(self) -> str:
        return f"{self.config.scrape_interval_seconds * 1000 - 1}ms"

    def _dcgm(self, metrics: tuple[MetricName, ...], by: list[str], chunk: Chunk) -> str:
        sel = self._matchers(chunk, self.config.uuid_label)
        parts = [
            f"(last_over_time({m.name}{{{sel}}}[{self._window()}]){_times(m.scale)} >= 0)" for m in metrics
        ]
        return f"max by ({', '.join(dict.fromkeys(by))}) ({' or '.join(parts)})"

    def _raw(
        self,
        out: HourReadings,
        meter: str,
        scope: str,
        metrics: list[tuple[str, float]],
        by: list[str],
        agg: str,
        sel: str,
        chunk: Chunk,
        at: datetime,
        estimate: int,
        variant: int = 0,
        hami: HamiMetric | None = None,
        total: str = "sum_over_time",
    ) -> None:
        """Range functions straight on the raw series (about 8x cheaper than the subquery form):
        right where a series is one share's (pod labels tell it apart). ``min_over_time`` finds the
        series with a negative sample and NaN makes a sum non-finite: those series-hours are not used
        (noted, the share's row then incomplete), never summed as if they were good."""
        group = ", ".join(dict.fromkeys(by))

        def over(fn: str, scaled: bool) -> str:
            parts = [f"{fn}({name}{{{sel}}}[1h]){_times(scale) if scaled else ''}" for name, scale in metrics]
            return " or ".join(parts)

        label = f"{meter}/{scope}" + (f"/{hami.name}" if hami else "")
        totals = self._query(
            out, f"{label}/sum", f"{agg} by ({group}) ({over(total, True)})", chunk, at, estimate
        )
        counts = self._query(
            out, f"{label}/count", f"max by ({group}) ({over('count_over_time', False)})", chunk, at, estimate
        )
        lows = self._query(
            out, f"{label}/min", f"min by ({group}) ({over('min_over_time', False)})", chunk, at, estimate
        )
        bad = {_key(r["metric"]) for r in lows if (_number(r["value"][1]) or Decimal(0)) < 0}
        if bad:
            out.notes.append(f"{label} [{chunk.name}]: {len(bad)} series with negative samples not used")
        kept = [r for r in totals if _key(r["metric"]) not in bad]
        self._collect(out, meter, scope, kept, counts, variant=variant, hami=hami)

    def _gauge(
        self,
        out: HourReadings,
        meter: str,
        scope: str,
        inner: str,
        chunk: Chunk,
        at: datetime,
        estimate: int,
        variant: int = 0,
        hami: HamiMetric | None = None,
    ) -> None:
        step = self.config.scrape_interval_seconds
        label = f"{meter}/{scope}" + (f"/{hami.name}" if hami else "")
        totals = self._query(
            out, f"{label}/sum", f"sum_over_time(({inner})[1h:{step}s])", chunk, at, estimate
        )
        counts = self._query(
            out, f"{label}/count", f"count_over_time(({inner})[1h:{step}s])", chunk, at, estimate
        )
        self._collect(out, meter, scope, totals, counts, variant=variant, hami=hami)

    # -- talking to Prometheus -------------------------------------------------------------------

    def _query(
        self, out: HourReadings | XidWindow, label: str, query: str, chunk: Chunk, at: datetime, estimate: int
    ) -> list[dict[str, Any]]:
        params = {"query": query, "time": f"{at.timestamp():.3f}", "stats": "all"}
        try:
            response = self.session.post(
                f"{self.url}/api/v1/query", data=params, timeout=self.config.timeout_seconds
            )
        except requests.Timeout as exc:
            raise UsageSourceError(
                f"Prometheus timed out after {self.config.timeout_seconds}s ({label})"
            ) from exc
        except requests.RequestException as exc:
            raise UsageSourceError(f"Prometheus unreachable at {self.url}: {failure_text(exc)}") from exc
        if response.is_redirect:
            raise UsageSourceError(f"Prometheus answered {response.status_code} to {label}: redirect refused")
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            # Whatever else answered (an internal page, a metadata service) is never shown back.
            raise UsageSourceError(
                f"Prometheus answered {response.status_code} to {label}: not a Prometheus answer"
            )
        if response.status_code != 200 or body.get("status") != "success":
            raise UsageSourceError(
                f"Prometheus answered {response.status_code} to {label}: {_prometheus_error(body)}"
            )
        data = body.get("data") or {}
        if data.get("resultType") != "vector" or not isinstance(data.get("result"), list):
            raise UsageSourceError(f"Prometheus gave a malformed answer to {label}")
        for warning in body.get("warnings") or ():
            # A partial answer (Thanos/Mimir with a store down): what came back is used, the points
            # it lacks make the hour incomplete, and the warning is kept with the hour.
            out.notes.append(f"{label} [{chunk.name}]: {warning}")
        stats = (data.get("stats") or {}).get("samples") or {}
        samples = stats.get("totalQueryableSamples")
        out.queries.append(
            QueryCost(
                label,
                chunk.name,
                estimate,
                int(samples) if samples is not None else None,
                len(data["result"]),
            )
        )
        return data["result"]

    def _collect(
        self,
        out: HourReadings,
        meter: str,
        scope: str,
        totals: list[dict[str, Any]],
        counts: list[dict[str, Any]],
        *,
        variant: int,
        hami: HamiMetric | None = None,
    ) -> None:
        seen = {_key(r["metric"]): _number(r["value"][1]) for r in counts}
        for r in totals:
            labels = r["metric"]
            total = _number(r["value"][1])
            if total is None or not total.is_finite():
                out.notes.append(
                    f"{meter}/{scope}: a non-finite total for {json.dumps(labels, sort_keys=True)}"
                )
                continue
            samples = seen.get(_key(labels)) or Decimal(0)
            out.readings.append(self._reading(meter, scope, labels, total, int(samples), variant, hami))

    def _reading(
        self,
        meter: str,
        scope: str,
        labels: dict[str, str],
        total: Decimal,
        samples: int,
        variant: int,
        hami: HamiMetric | None,
    ) -> SeriesReading:
        cfg = self.config
        if hami is not None:
            return SeriesReading(
                meter,
                scope,
                labels.get(hami.device_label, ""),
                total,
                samples,
                namespace=labels.get(hami.namespace_label, ""),
                pod=labels.get(hami.pod_label, ""),
                variant=variant,
            )
        return SeriesReading(
            meter,
            scope,
            labels.get(cfg.uuid_label, ""),
            total,
            samples,
            gpu_instance=labels.get(cfg.gpu_instance_label, ""),
            profile=labels.get(cfg.profile_label, ""),
            host=_first(labels, cfg.host_labels),
            namespace=_first(labels, cfg.namespace_labels),
            pod=_first(labels, cfg.pod_labels),
            variant=variant,
        )


# The errorType values of Prometheus's HTTP API (web/api/v1): only an answer in that shape is
# Prometheus explaining a refused query, and only then is its message kept.
PROMETHEUS_ERROR_TYPES = frozenset(
    {"timeout", "canceled", "execution", "bad_data", "internal", "unavailable", "not_found", "not_acceptable"}
)


def _prometheus_error(body: dict[str, Any]) -> str:
    kind, message = body.get("errorType"), body.get("error")
    if body.get("status") == "error" and kind in PROMETHEUS_ERROR_TYPES and isinstance(message, str):
        return f"{kind}: {message[:200]}"
    return "not a Prometheus answer"


def _times(scale: float) -> str:
    return "" if scale == 1 else f" * {scale!r}"


def _first(labels: dict[str, str], names: tuple[str, ...]) -> str:
    """The first non-empty of the candidate labels: old exporters send pod="" when idle, new ones
    send no label; behind kube-prometheus exported_pod names the workload and pod the exporter."""
    for name in names:
        if labels.get(name):
            return labels[name]
    return ""


def _key(labels: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(labels.items()))


def _number(text: str) -> Decimal | None:
    try:
        value = Decimal(text)
    except (InvalidOperation, TypeError):
        return None
    return value if value.is_finite() else None


def chunk_count(*, expected_series: int, points: int, budget: int) -> int:
    return len(plan_chunks(expected_series=expected_series, points=points, budget=budget))


__all__ = ["Chunk", "PrometheusUsageSource", "chunk_count", "plan_chunks"]
