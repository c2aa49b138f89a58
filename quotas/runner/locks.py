"""The authoritative admission: lock, snapshot, decide with the pure engine, persist, in one transaction.

Locks are PostgreSQL transaction-scoped advisory locks, always in one global order: the cohort root,
then every flavor involved (sorted), and no write to a request before both. Quota and tenant-wide
budgets are per cohort, so the cohort lock is held for the whole decision; physical capacity is per
flavor and shared by every cohort, so the flavor lock is taken last, just before the writes: the
decision is made on free capacity read without it, then checked against what admitted requests hold,
read again under it (and made again, in memory, if that changed); the lock and that read go to the
database in one round trip. One flavor's lock is therefore held for a read and the writes, not for the
whole decision, and cohorts decide side by side. (Pool capacity is inventory's, changed without these
locks, so it is read before them.) Two transactions can never
both spend the same unit, and the fixed order means they cannot deadlock.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from gpuplatform.db.locks import LockSpace, lock_ids, lock_ids_then, lock_ids_then_all
from gpuplatform.db.together import Statement


def lock_cohorts(*, root_ids: Iterable[uuid.UUID]) -> None:
    """The first lock of an admission: the cohort roots (sorted). Released at the transaction's end."""
    lock_ids(LockSpace.QUOTA_COHORT, root_ids)


def lock_cohorts_then_all(
    *, root_ids: Iterable[uuid.UUID], reads: list[Statement]
) -> list[list[tuple[Any, ...]]]:
    """`lock_cohorts`, then each of ``reads`` under them, in one round trip on PostgreSQL: their rows."""
    return lock_ids_then_all(LockSpace.QUOTA_COHORT, root_ids, reads)


def lock_flavors(*, flavor_ids: Iterable[uuid.UUID]) -> None:
    """The second lock: the flavors (sorted), after the cohorts and before any write to a request."""
    lock_ids(LockSpace.QUOTA_FLAVOR, flavor_ids)


def lock_flavors_then(*, flavor_ids: Iterable[uuid.UUID], read: Statement) -> list[tuple[Any, ...]]:
    """`lock_flavors`, then ``read`` under them, in one round trip on PostgreSQL: its rows."""
    return lock_ids_then(LockSpace.QUOTA_FLAVOR, flavor_ids, read)


def lock_admission(*, flavor_ids: Iterable[uuid.UUID], root_ids: Iterable[uuid.UUID]) -> None:
    """Both locks at once, in the global order, for changes that write before deciding."""
    lock_cohorts(root_ids=root_ids)
    lock_flavors(flavor_ids=flavor_ids)
