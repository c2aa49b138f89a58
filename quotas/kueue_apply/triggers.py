"""Queue the Kueue apply after every change to what it compiles: tenants and their namespaces,
flavors, quotas, queues, priority classes (Django's model signals, so a lower app such as tenants
need not know), after a cluster's enforcement backend is switched (inventory's signal), and after
a capacity request is admitted, preempted, released or expires (quotas.dispatch, beside its
materialisation): on a kueue cluster a holding request is a raise of its tenant's nominal quota.

One apply per cluster per transaction, however many rows it changed: the first change registers
an on-commit batch, later ones add to it (found again in the connection's on-commit list, so a
rolled-back transaction takes its batch with it). Which clusters are in kueue mode, and which
cluster each moved request is on, is read at commit, not on every save."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from celery import current_app
from django.db import connection, transaction

from inventory.models import Cluster, EnforcementBackend
from quotas.models import CapacityRequest

APPLY_TASK = "quotas.apply_kueue"


class _Batch:
    def __init__(self) -> None:
        self.cluster_ids: set[str] = set()
        self.request_ids: set[str] = set()
        self.every_kueue_cluster = False

    def __call__(self) -> None:
        ids = set(self.cluster_ids)
        if self.every_kueue_cluster:
            ids.update(
                str(pk)
                for pk in Cluster.objects.filter(enforcement_backend=EnforcementBackend.KUEUE).values_list(
                    "pk", flat=True
                )
            )
        elif self.request_ids and (kueue := _kueue_cluster_ids()):
            ids.update(
                str(pk)
                for pk in CapacityRequest.objects.filter(
                    pk__in=self.request_ids, flavor__pool__cluster_id__in=kueue
                )
                .order_by()
                .values_list("flavor__pool__cluster_id", flat=True)
                .distinct()
            )
        for cluster_id in sorted(ids):
            current_app.signature(APPLY_TASK, args=(cluster_id,)).delay()


def _kueue_cluster_ids() -> list[str]:
    """The clusters in kueue mode now. Read after the moves committed, as the join it guards: a
    cluster switched before this read is seen here; one switched after it is applied by the switch's
    own apply, which runs after its commit and so sees these requests. Most fleets have no kueue
    cluster: then this read of a few rows replaces the four-table join (~3 ms of planning alone) that
    every admission's commit ran to find nothing."""
    with connection.cursor() as cursor:
        cursor.execute(_KUEUE_CLUSTERS, [EnforcementBackend.KUEUE.value])
        return [str(row[0]) for row in cursor.fetchall()]


_KUEUE_CLUSTERS = f"SELECT id FROM {Cluster._meta.db_table} WHERE enforcement_backend = %s"  # noqa: S608


def _batch() -> _Batch:
    if connection.in_atomic_block:
        for entry in connection.run_on_commit:
            if isinstance(entry[1], _Batch):
                return entry[1]
    batch = _Batch()
    transaction.on_commit(batch)  # outside a transaction this runs at once, empty: filled below
    return batch


def queue_kueue_apply(*, cluster_id: str | None = None) -> None:
    """Apply one cluster (``cluster_id``) or every kueue cluster after the current transaction
    commits. Outside a transaction, at once."""
    if not connection.in_atomic_block:
        batch = _Batch()
        _fill(batch, cluster_id)
        batch()
        return
    _fill(_batch(), cluster_id)


def queue_kueue_apply_for_requests(request_ids: Iterable[uuid.UUID | str]) -> None:
    """These requests were admitted, preempted, released or expired: apply each kueue cluster they
    are on after the current transaction commits (one apply per cluster, however many moved), so
    their tenants' ClusterQueues gain or lose the raise. Outside a transaction, at once."""
    ids = {str(request_id) for request_id in request_ids}
    if not ids:
        return
    batch = _batch() if connection.in_atomic_block else _Batch()
    batch.request_ids.update(ids)
    if not connection.in_atomic_block:
        batch()


def _fill(batch: _Batch, cluster_id: str | None) -> None:
    if cluster_id is None:
        batch.every_kueue_cluster = True
    else:
        batch.cluster_ids.add(cluster_id)


def on_catalogue_changed(**kwargs: Any) -> None:
    """post_save / post_delete of a catalogue model."""
    if kwargs.get("raw"):  # fixtures being loaded
        return
    queue_kueue_apply()


def on_enforcement_backend_changed(*, cluster_id: str, **kwargs: Any) -> None:
    queue_kueue_apply(cluster_id=cluster_id)
