"""A list's page of new Workloads is written in one COPY (inventory/sync/workloads.py): the rows are
those the Workloads make one by one (as the watch applies them), every column; applying the same
objects again finds nothing changed (each stored value equals what the sync compares it with); the
tenant and the plain explanation follow the LocalQueue; gpuplatform's admission check is woken once
per batch that has a Workload waiting on it."""

from __future__ import annotations

import uuid

import pytest

from benchmarks.sync_workloads import workload_objects
from inventory.models import KueueApplyState, Workload
from inventory.sync.context import SyncContext
from inventory.sync.workloads import FIELDS, apply_workloads
from tests.inventory import factories as inv

PAGE = 500
NAMESPACES = ["team-vision", "team-nlp", "team-elsewhere"]
# Columns that differ between two clusters' copies of the same Workload by design.
OWN = {"id", "cluster", "updated_at"}


def _objects(count: int) -> list[dict]:
    objects = workload_objects(count=count, namespaces=NAMESPACES, seed=7)
    for index, obj in enumerate(objects):
        obj["metadata"]["uid"] = str(uuid.UUID(int=index + 1))
    objects[3]["spec"]["queueName"] = "side-door"  # a LocalQueue gpuplatform did not write
    return objects


def _cluster(name: str):
    cluster = inv.cluster(name)
    cluster.enforcement_backend = "kueue"
    cluster.save(update_fields=["enforcement_backend"])
    # gpuplatform wrote LocalQueue "gpu" in vision's and nlp's namespaces, not in the third
    KueueApplyState.objects.create(
        cluster=cluster, applied=["LocalQueue/team-vision/gpu", "LocalQueue/team-nlp/gpu", "ClusterQueue/x"]
    )
    return cluster


def _rows(cluster) -> dict[str, dict]:
    columns = [f.attname for f in Workload._meta.concrete_fields if f.name not in OWN]
    return {row["uid"]: row for row in Workload.objects.filter(cluster=cluster).values(*columns)}


@pytest.mark.django_db
def test_a_page_of_new_workloads_gives_the_rows_of_one_by_one(cast, django_capture_on_commit_callbacks):
    objects = _objects(1200)
    paged, single = _cluster("east"), _cluster("west")

    # when one cluster lists them in pages and the other gets them one at a time
    with django_capture_on_commit_callbacks() as woken:
        written = [apply_workloads(SyncContext(paged), objects[i : i + PAGE]) for i in range(0, 1200, PAGE)]
    assert written == [500, 500, 200]
    assert len(woken) == 3  # each page has Workloads waiting on the budget check
    for obj in objects:
        apply_workloads(SyncContext(single), [obj])

    # then both hold the same rows, column for column
    rows = _rows(paged)
    assert len(rows) == 1200 and rows == _rows(single)
    assert Workload.objects.filter(cluster=paged).values("id").distinct().count() == 1200

    # and the tenant follows the LocalQueue gpuplatform wrote, with the plain explanation
    def tenants(namespace: str) -> set:
        ours = [r for r in rows.values() if r["namespace"] == namespace and r["queue_name"] == "gpu"]
        return {r["tenant_id"] for r in ours}

    assert (tenants("team-vision"), tenants("team-nlp")) == ({cast.vision.pk}, {cast.nlp.pk})
    assert tenants("team-elsewhere") == {None}
    side = rows[objects[3]["metadata"]["uid"]]
    assert side["tenant_id"] is None
    assert side["explanation"].startswith("Unattributed: LocalQueue 'side-door' in namespace 'team-vision'")
    assert {r["state"] for r in rows.values()} == {"admitted", "pending", "quota_reserved"}
    admitted = next(r for r in rows.values() if r["state"] == "admitted")
    assert admitted["flavors"] == {"main": {"nvidia.com/gpu": "h100", "cpu": "default", "memory": "default"}}
    assert admitted["pod_sets"][0]["requests"]["nvidia.com/gpu"] in {"1", "2", "4", "8"}
    assert admitted["present"] and admitted["gone_at"] is None and admitted["created_in_cluster"]

    # and the same pages again change nothing: every stored value equals what the sync compares
    stamps = dict(Workload.objects.filter(cluster=paged).values_list("uid", "updated_at"))
    with django_capture_on_commit_callbacks() as woken:
        again = [apply_workloads(SyncContext(paged), objects[i : i + PAGE]) for i in range(0, 1200, PAGE)]
    assert again == [0, 0, 0] and woken == []
    assert dict(Workload.objects.filter(cluster=paged).values_list("uid", "updated_at")) == stamps
    assert _rows(paged) == rows
    assert set(FIELDS) >= {f.attname for f in Workload._meta.concrete_fields} - {"id", "cluster_id", "uid"}
