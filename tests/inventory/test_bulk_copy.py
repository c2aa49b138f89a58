"""The rows ``insert_values`` and ``insert_rows`` COPY (inventory/sync/bulk.py) are the rows Django's
``create`` writes from the same values: plain values (sent as they are, in COPY's binary format),
values Django prepares first (an int for a Decimal, a UUID's text, a naive time, a choices enum), a
value rounded to its column, JSON, nulls and defaults, each column in its place."""

from __future__ import annotations

import uuid
import warnings
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from inventory.models import Allocation, HolderKind, Node
from inventory.sync.bulk import insert_rows, insert_values
from tests.inventory import factories as inv

COMPARED = [
    "namespace",
    "holder_kind",
    "unit_key",
    "resource_name",
    "count",
    "ge",
    "model_key",
    "details",
    "node_name",
    "node_id",
    "pool_id",
    "gpu_id",
    "unit_id",
    "claim_id",
    "tenant_id",
    "started_at",
    "ended_at",
    "end_reason",
]


def _rows(cluster: Any, node: Any, prefix: str) -> list[dict[str, Any]]:
    start = datetime(2026, 12, 7, 10, 30, 15, 123456, tzinfo=UTC)
    plain = {
        "cluster_id": cluster.pk,
        "namespace": "team-vision",
        "holder_kind": "Pod",
        "unit_key": "nvidia.com/gpu",
        "resource_name": "nvidia.com/gpu",
        "count": 2,
        "ge": Decimal("0.5"),
        "model_key": "nvidia-h100-80gb",
        "details": {"claim": None, "devices": ["gpu-0", "gpu-1"], "nested": {"n": 1.5, "ok": True}},
        "node_name": node.name,
        "node_id": node.pk,
        "pool_id": node.pool_id,
        "started_at": start,
    }
    return [
        {**plain, "holder_name": f"{prefix}-plain", "holder_uid": f"{prefix}-1"},
        # left to their defaults: count, model_key, details
        {
            **{k: v for k, v in plain.items() if k not in ("count", "model_key", "details")},
            "holder_name": f"{prefix}-defaults",
            "holder_uid": f"{prefix}-2",
        },
        {
            **plain,
            "holder_name": f"{prefix}-ended",
            "holder_uid": f"{prefix}-3",
            "ended_at": start + timedelta(hours=1),
            "end_reason": "deleted",
            "ge": Decimal("0.142857142857142857142857"),  # more places than the column keeps
            "details": [],
        },
    ]


def _prepared_by_django(rows: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    """The same rows with values Django prepares before they are written."""
    changed = [dict(row) for row in rows]
    changed[0]["ge"] = 1  # an int for a Decimal
    changed[0]["holder_kind"] = HolderKind.POD  # a choices enum (a str subclass)
    changed[1]["node_id"] = str(changed[1]["node_id"])  # a UUID's text
    changed[2]["started_at"] = changed[2]["started_at"].replace(tzinfo=None)  # naive: Django makes it aware
    for row in changed:
        row["holder_uid"] = row["holder_uid"].replace(prefix, f"{prefix}-d")
    return changed


def _stored(cluster: Any, uids: list[str]) -> list[tuple[Any, ...]]:
    rows = Allocation.objects.filter(cluster=cluster, holder_uid__in=uids).order_by("holder_uid")
    return [tuple(row[name] for name in COMPARED) for row in rows.values(*COMPARED)]


@pytest.mark.django_db
@pytest.mark.parametrize("django_prepares", [False, True], ids=["plain-values", "values-django-prepares"])
def test_insert_values_writes_what_create_writes(django_prepares):
    cluster = inv.cluster("east")
    node = inv.node("n1", in_pool=inv.pool(on=cluster))
    copied, created = _rows(cluster, node, "copy"), _rows(cluster, node, "orm")
    if django_prepares:
        copied, created = _prepared_by_django(copied, "copy"), _prepared_by_django(created, "orm")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the naive time, as Django warns of it
        insert_values(Allocation, copied)
        for row in created:
            Allocation.objects.create(**row)

    copied_uids = [row["holder_uid"] for row in copied]
    created_uids = [row["holder_uid"] for row in created]
    assert len(_stored(cluster, copied_uids)) == 3
    assert _stored(cluster, copied_uids) == _stored(cluster, created_uids)
    stored = Allocation.objects.get(holder_uid=copied_uids[2])
    assert stored.ended_at == datetime(2026, 12, 7, 11, 30, 15, 123456, tzinfo=UTC)


@pytest.mark.django_db
def test_insert_rows_writes_the_instances_and_marks_them_saved():
    cluster = inv.cluster("east")
    pool = inv.pool(on=cluster)
    nodes = [
        Node(id=uuid.uuid4(), cluster=cluster, pool=pool, name=f"copy-{i}", labels={"zone": f"z{i}"})
        for i in range(3)
    ]

    insert_rows(Node, nodes)

    stored = {n.name: n for n in Node.objects.filter(cluster=cluster, name__startswith="copy-")}
    assert set(stored) == {"copy-0", "copy-1", "copy-2"}
    for node in nodes:
        assert not node._state.adding
        assert stored[node.name].pk == node.pk
        assert stored[node.name].labels == node.labels
        assert stored[node.name].pool_id == pool.pk
