"""Opening and closing allocation intervals: the ledger metering bills from.

A holder's wanted rows are computed from its latest object; what is open and no longer wanted is
closed, what is wanted and not open is opened. The partial unique index on open intervals makes a
duplicate impossible; closing (never deleting) makes a lost interval impossible.

An interval opened or closed at a time before the current hour began changes hours that are over and
may have been metered: each such change is recorded (``ChangedHours``) for metering to meter again.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from inventory.changed_hours import mark_changed_hours
from inventory.models import Allocation, Cluster
from inventory.sync.bulk import insert_values

CHUNK = 2000


@dataclass(frozen=True, slots=True)
class WantedRow:
    unit_key: str
    resource_name: str
    count: int
    ge: Decimal
    model_key: str
    node_name: str
    node_id: uuid.UUID | None
    pool_id: uuid.UUID | None
    gpu_id: uuid.UUID | None
    unit_id: uuid.UUID | None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Holder:
    kind: str
    uid: str
    name: str
    namespace: str
    tenant_id: uuid.UUID | None
    started_at: datetime  # when the cluster says the holding began
    ended_at: datetime  # when it ended, used for rows no longer wanted
    rows: tuple[WantedRow, ...]
    claim_id: uuid.UUID | None = None


def reconcile_holders(
    *, cluster: Cluster, holders: Iterable[Holder], reason: str, may_be_open: set[str] | None = None
) -> int:
    """Bring the open intervals of these holders in line with their wanted rows; returns changes.

    ``may_be_open``: when known (during a list), the only uids that can have open intervals."""
    by_uid = {holder.uid: holder for holder in holders}
    if not by_uid:
        return 0
    open_rows: dict[tuple[str, str], Allocation] = {}
    uids = [uid for uid in by_uid if may_be_open is None or uid in may_be_open]
    for start in range(0, len(uids), CHUNK):
        for row in Allocation.objects.filter(
            cluster=cluster, holder_uid__in=uids[start : start + CHUNK], ended_at__isnull=True
        ).only("pk", "holder_uid", "unit_key", "started_at"):
            open_rows[(row.holder_uid, row.unit_key)] = row
    wanted = {(h.uid, row.unit_key): (h, row) for h in by_uid.values() for row in h.rows}
    closing = [row for key, row in open_rows.items() if key not in wanted]
    for row in closing:
        row.ended_at = max(by_uid[row.holder_uid].ended_at, row.started_at)
        row.end_reason = reason
    Allocation.objects.bulk_update(closing, ["ended_at", "end_reason"], batch_size=CHUNK)
    opening: list[dict[str, Any]] = [
        {
            "cluster_id": cluster.pk,
            "tenant_id": holder.tenant_id,
            "namespace": holder.namespace,
            "holder_kind": holder.kind,
            "holder_name": holder.name,
            "holder_uid": holder.uid,
            "unit_key": row.unit_key,
            "resource_name": row.resource_name,
            "count": row.count,
            "ge": row.ge,
            "model_key": row.model_key,
            "details": row.details,
            "node_name": row.node_name,
            "node_id": row.node_id,
            "pool_id": row.pool_id,
            "gpu_id": row.gpu_id,
            "unit_id": row.unit_id,
            "claim_id": holder.claim_id,
            "started_at": holder.started_at,
        }
        for key, (holder, row) in wanted.items()
        if key not in open_rows
    ]
    insert_values(Allocation, opening)
    mark_changed_hours(
        cluster_id=cluster.pk,
        times=[row.ended_at for row in closing if row.ended_at]
        + [holder.started_at for key, (holder, _) in wanted.items() if key not in open_rows],
    )
    return len(closing) + len(opening)


def close_holders(*, cluster: Cluster, kind: str, ended: dict[str, datetime], reason: str) -> int:
    """Close every open interval of the given holders (deleted or vanished), at their end times."""
    if not ended:
        return 0
    uids = list(ended)
    closing: list[Allocation] = []
    for start in range(0, len(uids), CHUNK):
        rows = Allocation.objects.filter(
            cluster=cluster,
            holder_kind=kind,
            holder_uid__in=uids[start : start + CHUNK],
            ended_at__isnull=True,
        ).only("pk", "holder_uid", "started_at")
        for row in rows:
            row.ended_at = max(ended[row.holder_uid], row.started_at)
            row.end_reason = reason
            closing.append(row)
    Allocation.objects.bulk_update(closing, ["ended_at", "end_reason"], batch_size=CHUNK)
    mark_changed_hours(cluster_id=cluster.pk, times=[row.ended_at for row in closing if row.ended_at])
    return len(closing)


def open_holder_uids(*, cluster: Cluster, kind: str) -> set[str]:
    return set(
        Allocation.objects.filter(cluster=cluster, holder_kind=kind, ended_at__isnull=True)
        .values_list("holder_uid", flat=True)
        .distinct()
    )
