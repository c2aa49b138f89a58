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

from collections.abc import Sequence
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
