"""PostgreSQL advisory locks: the one registry of lock spaces, and the helpers that take them.

A lock is ``pg_advisory_xact_lock(space, key)``: held until the transaction ends, never released by
hand. ``space`` is a fixed number per purpose, below; ``key`` says which object (the first four bytes
of a UUID, or PostgreSQL's ``hashtext`` of a name). Two purposes must never share a space, or one
would wait on the other for nothing.

The numbers are a wire format between processes: during a rolling deploy an old and a new process
run side by side and exclude each other only if they lock the same (space, key). So a space's number
is never changed and never reused for another purpose, even after its purpose is gone (retire it in
a comment instead); tests/core/test_locks.py pins them.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable
from typing import Any

from django.db import connection, transaction

from gpuplatform.db.together import Statement, run_together


@enum.unique
class LockSpace(enum.IntEnum):
    """Advisory-lock spaces. Append only: never renumber, never reuse a retired number."""

    # Quotas: physical capacity of one flavor, shared by every cohort (quotas/runner/locks.py).
    QUOTA_FLAVOR = 50_501
    # Quotas: one cohort root's quota and budgets, held for a whole admission decision.
    QUOTA_COHORT = 50_502
    # Quotas: one namespace's cluster objects, across read-and-apply (quotas/materialise.py).
    QUOTA_NAMESPACE = 50_503
    # Policies: one admission-policy apply per cluster, so an older apply's prune never deletes what
    # a newer one has just applied (policies/services/admission.py).
    ADMISSION_APPLY = 50_512
    # Quotas: one apply of the compiled Kueue objects per cluster, so an older apply's prune never
    # deletes what a newer one has just applied (quotas/kueue_apply/).
    KUEUE_APPLY = 50_521
    # Quotas: one decision of gpuplatform's Kueue admission check per Workload (cluster/uid), so two
    # passes never decide and tell the cluster twice (quotas/kueue_check/).
    KUEUE_CHECK = 50_522


def _require_transaction() -> bool:
    """True where advisory locks exist (PostgreSQL); SQLite (the demo) serialises writers itself."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("advisory locks are transaction-scoped: take them inside transaction.atomic")
    return connection.vendor == "postgresql"


def id_key(value: uuid.UUID) -> int:
    """The key of an object by id: its UUID's first four bytes as a signed 32-bit integer."""
    return int.from_bytes(value.bytes[:4], "big", signed=True)


def lock_ids(space: LockSpace, ids: Iterable[uuid.UUID]) -> None:
    """Lock these objects of ``space`` until the transaction ends, in ascending key order (every
    caller takes them in that order, so two callers cannot deadlock over them)."""
    if not _require_transaction():
        return
    with connection.cursor() as cursor:
        for key in sorted({id_key(value) for value in ids}):
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [int(space), key])


def lock_ids_then(space: LockSpace, ids: Iterable[uuid.UUID], read: Statement) -> list[tuple[Any, ...]]:
    """`lock_ids`, then the ``read`` under the locks: its rows. On PostgreSQL the locks and the read
    go in one round trip (`gpuplatform.db.together`: the read still runs after the locks are held,
    with a snapshot taken then); this is for reads made under a lock others queue on."""
    return lock_ids_then_all(space, ids, [read])[-1]


def lock_ids_then_all(
    space: LockSpace, ids: Iterable[uuid.UUID], reads: list[Statement]
) -> list[list[tuple[Any, ...]]]:
    """As `lock_ids_then`, with several reads after the locks, each run with its own snapshot, in
    order; every read's rows. Still one round trip on PostgreSQL."""
    if not _require_transaction():
        return [rows or [] for rows in run_together(reads)]
    locks: list[Statement] = [
        ("SELECT pg_advisory_xact_lock(%s, %s)", [int(space), key])
        for key in sorted({id_key(v) for v in ids})
    ]
    return [rows or [] for rows in run_together([*locks, *reads])[len(locks) :]]


def lock_name(space: LockSpace, name: str) -> None:
    """Lock one named object of ``space`` (keyed by PostgreSQL's ``hashtext(name)``) until the
    transaction ends."""
    if not _require_transaction():
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [int(space), name])
