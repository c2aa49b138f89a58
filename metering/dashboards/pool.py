"""The pool dashboard's utilisation heatmap (page ``pool-dashboard``, rendered by inventory/views.py):
one row per card of the pool's present nodes, one cell per hour of the last 24, the GE-hours used on
that card in the hour (the usage ledger's ``used_ge_hours`` rows on the card, summed over its holders)
as a percentage of one card-hour. An hour the cluster has not metered is "unmetered", never 0 %; an
hour whose samples had gaps is marked incomplete. Three queries whatever the cards and hours."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta
from fractions import Fraction
from typing import Any

from django.db.models import Count, Q, Sum
from django.utils import timezone

from gpuplatform.accounts.models import User
from inventory.models import Gpu, NodePool
from metering.dashboards import series
from metering.models import Meter, MeteredHour, UsageHour
from metering.services.ledger import LEDGER_SOURCE

TEMPLATE = "metering/_pool_heatmap.html"
HOURS_SHOWN = 24
CARDS_SHOWN = 64


def heatmap_context(user: User, pool: NodePool, *, now: datetime | None = None) -> dict[str, Any]:
    if not user.sees_all_tenants:
        # Cards carry every tenant's use: the platform's view, as the node pages are.
        return {"heat_hidden": True, "hours_shown": HOURS_SHOWN}
    now = now or timezone.now()
    last = now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)  # the last whole hour
    hours = [last - timedelta(hours=HOURS_SHOWN - 1 - n) for n in range(HOURS_SHOWN)]
    gpus = list(
        Gpu.objects.visible_to(user)
        .filter(node__pool=pool, node__present=True)
        .select_related("node")
        .order_by("node__name", "index")[: CARDS_SHOWN + 1]
    )
    metered = set(
        MeteredHour.objects.filter(
            cluster_id=pool.cluster_id, complete=True, hour__gte=hours[0], hour__lte=last
        )
        .exclude(source=LEDGER_SOURCE)
        .values_list("hour", flat=True)
    )
    used: dict[tuple[str, datetime], Fraction] = defaultdict(Fraction)
    gaps: set[tuple[str, datetime]] = set()
    for card, hour, quantity, incomplete in (
        UsageHour.objects.filter(
            pool=pool, meter=Meter.USED_GE_HOURS, hour__gte=hours[0], hour__lte=last, card_key__gt=""
        )
        .values("card_key", "hour")
        .annotate(quantity=Sum("quantity"), incomplete=Count("pk", filter=Q(complete=False)))
        .values_list("card_key", "hour", "quantity", "incomplete")
    ):
        used[(card, hour)] += Fraction(quantity)
        metered.add(hour)  # a row for the hour is a measurement, whatever the job's bookkeeping says
        if incomplete:
            gaps.add((card, hour))
    rows: list[dict[str, Any]] = []
    cells_all: list[series.HeatCell] = []
    for gpu in gpus[:CARDS_SHOWN]:
        key = gpu.uuid
        cells = [
            series.heat_cell(
                hour=hour,
                used=used.get((key, hour)),
                metered=hour in metered and bool(key),
                complete=(key, hour) not in gaps,
            )
            for hour in hours
        ]
        rows.append({"gpu": gpu, "label": f"{gpu.node.name}/gpu{gpu.index}", "cells": cells})
        cells_all.extend(cells)
    known = [c.percent for c in cells_all if c.percent is not None]
    return {
        "heat_rows": rows,
        "heat_hours": hours,
        "heat_more": len(gpus) > CARDS_SHOWN,
        "heat_mean": None if not known else round(sum(known) / len(known), 1),
        "heat_measured": bool(known),
        "hours_shown": HOURS_SHOWN,
    }
