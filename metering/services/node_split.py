"""Where each report line's card-hours sat, node by node: what FOCUS 1.3's per-node origin charges
are cut from (metering/exports/focus13.py). Reads the frozen ledger of a period in aggregate, as the
report does (services/reports.py), with the node added to the groups.

Per node and not per card: a rate card prices a GPU model (or a pool's flavor) per card-hour, so
every card of a node costs the same and a card carries no charge of its own; the ledger knows a
holder's card only where the data plane says (HAMi, DRA, whole GPUs by index), while a node's
card-hours and idle are exact per node-hour (CapacityHour). A node's origin is therefore the one
physical charge every holder of the period can be placed in.

Only lines on the allocation basis are cut: their card-hours are the ledger's own. A utilisation or
blended line prices measured use, which the ledger keeps per share but not split by node for every
source; such lines keep one origin per pool and price (focus13 treats a line with no weights so)."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from django.db.models import QuerySet

from inventory.models import Cluster
from metering.exports.focus13 import NodeKey
from metering.models import Basis, BillingPeriod, CapacityHour, Meter, ReportLine, UsageHour
from metering.services.pricing import load_cards, price_segments
from metering.services.reports import _per_bucket

__all__ = ["node_weights"]

ZERO = Decimal(0)


def node_weights(lines: QuerySet[ReportLine, Any]) -> dict[NodeKey, dict[str, tuple[Decimal, Decimal]]]:
    """Per (period, pool, model, rate card, tenant, flavor, charge or idle): the card-hours and
    GE-hours on each node, for the periods ``lines`` (already scoped) has split lines in. Two
    aggregate queries per period."""
    period_ids = (
        lines.order_by().filter(kind__in=("charge", "idle", "idle_share")).values_list("period_id", flat=True)
    )
    out: dict[NodeKey, dict[str, tuple[Decimal, Decimal]]] = {}
    for period in BillingPeriod.objects.filter(pk__in=period_ids.distinct()).order_by("starts_at"):
        out.update(_period_weights(period))
    return out


def _period_weights(period: BillingPeriod) -> dict[NodeKey, dict[str, tuple[Decimal, Decimal]]]:
    cards = load_cards(start=period.starts_at, end=period.ends_at)
    cuts = sorted(
        {period.starts_at, period.ends_at}
        | {
            t
            for c in cards
            for t in (c.effective_from, c.effective_to)
            if t is not None and period.starts_at < t < period.ends_at
        }
    )
    clusters = dict(Cluster.objects.values_list("pk", "name"))
    card_of: dict[tuple[Any, str], list[str | None]] = {}

    def bucket_cards(pool_id: uuid.UUID | None, model: str) -> list[str | None]:
        """Per bucket (1..n), the rate card pricing it when on the allocation basis, else None."""
        if (pool_id, model) not in card_of:
            segments = price_segments(
                cards=cards, pool_id=pool_id, gpu_model=model, start=period.starts_at, end=period.ends_at
            )
            refs: list[str | None] = [None]
            for index in range(1, len(cuts)):
                card = next((s.card for s in segments if s.start <= cuts[index - 1] < s.end), None)
                if card is None:
                    refs.append("")  # unpriced hours: on the allocation basis (what the report does)
                else:
                    refs.append(str(card.pk) if card.basis == Basis.ALLOCATION else None)
            card_of[(pool_id, model)] = refs
        return card_of[(pool_id, model)]

    sums: dict[NodeKey, dict[str, list[Decimal]]] = defaultdict(lambda: defaultdict(lambda: [ZERO, ZERO]))

    def add(groups: Iterable[Mapping[str, Any]], field: str, ge_field: str | None, kind: str) -> None:
        for row in groups:
            label = f"{clusters[row['cluster_id']]}/{row['pool_name']}"
            refs = bucket_cards(row["pool_id"], row["gpu_model"])
            for i in range(1, len(cuts)):
                hours = row[f"{field}_{i}"]
                if hours is None or refs[i] is None:
                    continue
                tenant = str(row.get("tenant_id") or "")
                key = (
                    period.label,
                    label,
                    row["gpu_model"],
                    refs[i] or "",
                    tenant,
                    row.get("flavor_name", ""),
                    kind,
                )
                node = sums[key][row["node_name"]]
                node[0] += hours
                node[1] += (row[f"{ge_field}_{i}"] or ZERO) if ge_field else ZERO

    add(
        UsageHour.objects.filter(period=period, meter=Meter.ALLOCATED_GE_HOURS)
        .values("pool_id", "cluster_id", "pool_name", "gpu_model", "tenant_id", "flavor_name", "node_name")
        .annotate(**_per_bucket("card_hours", cuts), **_per_bucket("quantity", cuts))
        .order_by(),
        "card_hours",
        "quantity",
        "charge",
    )
    add(
        CapacityHour.objects.filter(period=period)
        .values("pool_id", "cluster_id", "pool_name", "gpu_model", "node_name")
        .annotate(**_per_bucket("idle_card_hours", cuts))
        .order_by(),
        "idle_card_hours",
        None,
        "idle",
    )
    return {key: {node: (v[0], v[1]) for node, v in sorted(nodes.items())} for key, nodes in sums.items()}
