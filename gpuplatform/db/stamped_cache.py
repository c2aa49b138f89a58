"""A per-process cache valid while a stamp row is unchanged.

The stamp is a one-row table that PostgreSQL triggers renew, from a sequence, inside every writer's
transaction on the tables the cached values are read from. A reader sees a new stamp exactly when it
can see the new rows, so a value cached under the stamp read before reading it is never served once
a change is visible; sequences never repeat, even when tests empty the tables. Where there is no
stamp (SQLite, the demo, or a database without the migration) nothing is cached.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from django.db import connection

V = TypeVar("V")

# A ``stamp`` argument's value when the caller has not read the stamp: `get_at` reads it then.
UNREAD = -1


class StampedCache(Generic[V]):
    def __init__(self, stamp_table: str, *, limit: int = 5_000) -> None:
        self._sql = f"SELECT stamp FROM {stamp_table} WHERE id = 1"  # noqa: S608 - a constant name
        self._limit = limit
        self._values: dict[Hashable, tuple[int, V]] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, read: Callable[[], V]) -> V:
        """The value for ``key``: cached while the stamp is unchanged, else ``read()`` and cached."""
        return self.get_at(self.stamp(), key, read)

    def get_at(self, stamp: int | None, key: Hashable, read: Callable[[], V]) -> V:
        """As `get`, under a ``stamp`` the caller read (`stamp`) before reading any of the values it
        asks for under it: several lookups, one read of the stamp."""
        if stamp == UNREAD:
            stamp = self.stamp()
        if stamp is not None:
            with self._lock:
                hit = self._values.get(key)
            if hit is not None and hit[0] == stamp:
                return hit[1]
        value = read()
        if stamp is not None:
            with self._lock:
                if len(self._values) >= self._limit:
                    self._values.clear()
                self._values[key] = (stamp, value)
        return value

    def peek(self, key: Hashable) -> tuple[int, V] | None:
        """What is cached for ``key`` and the stamp it was read under, checked against nothing: for a
        caller that reads the stamp later and uses the value only if the two are equal."""
        with self._lock:
            return self._values.get(key)

    def put_at(self, stamp: int, values: dict[Hashable, V]) -> None:
        """Cache ``values`` under ``stamp``, read (as `get_at` requires) before they were."""
        with self._lock:
            if len(self._values) + len(values) > self._limit:
                self._values.clear()
            for key, value in values.items():
                self._values[key] = (stamp, value)

    def stamp(self) -> int | None:
        """The stamp now; None where nothing is cached."""
        if connection.vendor != "postgresql":
            return None
        with connection.cursor() as cursor:
            cursor.execute(self._sql)
            row = cursor.fetchone()
        return None if row is None else int(row[0])

    @property
    def stamp_sql(self) -> str:
        """The read `stamp` makes, for a caller that sends it with other statements (PostgreSQL only);
        `stamp_of` reads its rows."""
        return self._sql

    @staticmethod
    def stamp_of(rows: list[tuple[Any, ...]]) -> int | None:
        return int(rows[0][0]) if rows else None
