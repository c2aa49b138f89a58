"""A simulated usage source: deterministic (seeded per share and hour), the same interface as
Prometheus. The demo meters with it when no PROMETHEUS_URL is set; its numbers are plausible, not real:
a working-day curve, busy and idle shares, memory that follows the load, power between idle and TDP."""

from __future__ import annotations

import math
import random
from decimal import Decimal

from metering.collection.attribute import points_within
from metering.collection.readings import (
    CARD_SCOPE,
    ENERGY,
    HAMI_SCOPE,
    MEMORY,
    SHARE_SCOPE,
    UTILISATION,
    HourPlan,
    HourReadings,
    SeriesReading,
)

IDLE_WATTS, BUSY_WATTS = 60, 600
CARD_MIB = 81920


class SimulatedUsageSource:
    name = "simulated"

    def __init__(self, *, seed: int = 1, step_seconds: int = 60) -> None:
        self.seed = seed
        self.step = step_seconds

    def _rng(self, *parts: object) -> random.Random:
        return random.Random(":".join(str(p) for p in (self.seed, *parts)))

    def _load(self, key: str, plan: HourPlan) -> float:
        """0-1: the share's own appetite times a working-day curve (UTC), with hour-to-hour noise."""
        appetite = self._rng("appetite", key).uniform(0.15, 0.95)
        hour = plan.hour.hour + plan.hour.minute / 60
        day = 0.55 + 0.45 * math.sin((hour - 8) / 24 * 2 * math.pi)
        noise = self._rng("noise", key, plan.hour.isoformat()).uniform(0.85, 1.15)
        return max(0.0, min(1.0, appetite * day * noise))

    def read_hour(self, *, plan: HourPlan) -> HourReadings:
        out = HourReadings(hour=plan.hour, step_seconds=self.step)
        points = 3600 // self.step
        card_load: dict[str, float] = {}
        first_card: dict[str, str] = {}
        for c in plan.cards:
            first_card.setdefault(c.node, c.uuid)
        for h in plan.holders:
            n = points_within(h.start, h.stop, self.step)
            load = self._load(h.share_key, plan)
            ratio = Decimal(str(round(load, 3)))
            mib = Decimal(int(load * CARD_MIB * float(h.ge) / h.count))
            uuid = h.card_uuid or first_card.get(h.node, f"GPU-sim-{h.node}")
            if h.mode == "hami":
                for meter, per_point in ((UTILISATION, ratio * h.ge), (MEMORY, mib)):
                    out.readings.append(
                        SeriesReading(
                            meter, HAMI_SCOPE, uuid, per_point * n, n, namespace=h.namespace, pod=h.pod
                        )
                    )
            elif h.mode != "split":
                for meter, per_point in ((UTILISATION, ratio), (MEMORY, mib)):
                    out.readings.append(
                        SeriesReading(
                            meter,
                            SHARE_SCOPE,
                            uuid,
                            per_point * n * h.count,
                            n * h.count,
                            namespace=h.namespace,
                            pod=h.pod,
                        )
                    )
            card_load[uuid] = min(1.0, card_load.get(uuid, 0.0) + load * float(h.ge))
        for c in plan.cards:
            load = card_load.get(c.uuid, 0.0)
            if c.mode == "split":
                ratio = Decimal(str(round(load, 3)))
                out.readings.append(
                    SeriesReading(UTILISATION, CARD_SCOPE, c.uuid, ratio * points, points, host=c.node)
                )
                mib = Decimal(int(load * CARD_MIB))
                out.readings.append(
                    SeriesReading(MEMORY, CARD_SCOPE, c.uuid, mib * points, points, host=c.node)
                )
            watts = IDLE_WATTS + (BUSY_WATTS - IDLE_WATTS) * load
            out.readings.append(
                SeriesReading(
                    ENERGY, CARD_SCOPE, c.uuid, Decimal(int(watts * 3600 * 1000)), points, host=c.node
                )
            )
        return out
