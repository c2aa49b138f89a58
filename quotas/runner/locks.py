"""The authoritative admission: lock, snapshot, decide with the pure engine, persist, in one transaction.

Locks are PostgreSQL transaction-scoped advisory locks, always in one global order: the cohort root,
then every flavor involved (sorted), and no write to a request before both. Quota and tenant-wide
budgets are per cohort, so the cohort lock is held for the whole decision; physical capacity is per
flavor and shared by every cohort, so the flavor lock is taken last, just before the writes: the
decision is made on free capacity read without it, then checked against capacity read again under
it (and made again, in memory, if that changed). One flavor's lock is therefore held for a read and
the writes, not for the whole decision, and cohorts decide side by side. Two transactions can never
both spend the same unit, and the fixed order means they cannot deadlock.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from django.db import connection, transaction

FLAVOR_LOCK_SPACE = 50_501
COHORT_LOCK_SPACE = 50_502


def _lock_key(value: uuid.UUID) -> int:
    return int.from_bytes(value.bytes[:4], "big", signed=True)


def _advisory(keys: list[tuple[int, int]]) -> None:
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("admission locks are taken inside a transaction")
    if connection.vendor != "postgresql":
        return  # SQLite (the demo) serialises writers on its own
    with connection.cursor() as cursor:
        for space, key in keys:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [space, key])


def lock_cohorts(*, root_ids: Iterable[uuid.UUID]) -> None:
    """The first lock of an admission: the cohort roots (sorted). Released at the transaction's end."""
    _advisory([(COHORT_LOCK_SPACE, k) for k in sorted({_lock_key(r) for r in root_ids})])


def lock_flavors(*, flavor_ids: Iterable[uuid.UUID]) -> None:
    """The second lock: the flavors (sorted), after the cohorts and before any write to a request."""
    _advisory([(FLAVOR_LOCK_SPACE, k) for k in sorted({_lock_key(f) for f in flavor_ids})])


def lock_admission(*, flavor_ids: Iterable[uuid.UUID], root_ids: Iterable[uuid.UUID]) -> None:
    """Both locks at once, in the global order, for changes that write before deciding."""
    lock_cohorts(root_ids=root_ids)
    lock_flavors(flavor_ids=flavor_ids)
