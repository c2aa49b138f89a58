"""Several statements in one round trip to PostgreSQL.

Each statement's parameters are bound here as psycopg binds a cursor's (client side), and the
statements go in one simple-protocol message: the server runs them in order, each with its own
snapshot (READ COMMITTED), so a read placed after an advisory lock sees whatever the lock's earlier
holders committed, as it would one round trip later. What it saves is the waiting between them: under
a lock that others queue on, each reply is a wake-up of the caller's thread (behind its process's
other threads) before the next statement can even be sent. An error in any statement raises here, in
the caller's transaction, and the statements after it do not run. Elsewhere (SQLite, the demo) the
statements run one by one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import connection

Statement = tuple[str, Sequence[Any] | None]


def run_together(statements: Sequence[Statement]) -> list[list[tuple[Any, ...]] | None]:
    """Run ``statements`` in order, in one round trip on PostgreSQL; each one's rows, or None for a
    statement that returns none."""
    results: list[list[tuple[Any, ...]] | None] = []
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            for sql, params in statements:
                cursor.execute(sql, params)
                results.append(cursor.fetchall() if cursor.description is not None else None)
            return results
        ops: Any = connection.ops  # the psycopg backend's: binds as its cursors do
        text = ";\n".join(ops.compose_sql(sql, params) for sql, params in statements)
        cursor.execute(text)
        for n in range(len(statements)):
            results.append(cursor.fetchall() if cursor.description is not None else None)
            if n + 1 < len(statements):
                cursor.nextset()
    return results


# Writes collected by the innermost open `writes_together` block of this thread: each statement, and
# what to do with its rows once sent.
_open = threading.local()
Then = Callable[[list[tuple[Any, ...]] | None], None]


@contextmanager
def writes_together() -> Iterator[None]:
    """Writes made inside through `write` (the bulk writers, `record_event`) are sent at the block's
    end, all in one round trip, and their keys set then; a block inside another joins it. Only for
    writes nothing in the block reads back: reads inside still run at once. Nothing is sent when the
    block raises (its transaction is rolled back anyway)."""
    if getattr(_open, "writes", None) is not None:
        yield
        return
    writes: list[tuple[Statement, Then | None]] = []
    _open.writes = writes
    try:
        yield
    finally:
        _open.writes = None
    if writes:
        results = run_together([statement for statement, _ in writes])
        for (_, then), rows in zip(writes, results, strict=True):
            if then is not None:
                then(rows)


def writing_together() -> bool:
    """A `writes_together` block is open in this thread."""
    return getattr(_open, "writes", None) is not None


def write(sql: str, params: Sequence[Any] | None, then: Then | None = None) -> None:
    """Run a write now (``then`` given its rows), or queue it in the open `writes_together` block."""
    writes = getattr(_open, "writes", None)
    if writes is not None and connection.vendor == "postgresql":
        writes.append(((sql, params), then))
        return
    (rows,) = run_together([(sql, params)])
    if then is not None:
        then(rows)
