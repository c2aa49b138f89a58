"""Inserting many new rows: PostgreSQL's COPY where the database is PostgreSQL, ``bulk_create`` elsewhere.

Django's ``bulk_create`` builds one ``INSERT ... VALUES`` per batch with a placeholder per field and
row; for the hourly usage ledger (60,000 rows of 22 columns an hour at fleet scale) compiling and
sending those cost ~0.3 ms a row, more than reading the hour from Prometheus. ``COPY ... FROM STDIN``
through psycopg streams the same values, adapted by each field as Django would, in one statement.
Like ``bulk_create``: no ``save()``, no signals; unlike it, primary keys are not set on the objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connections, models, router


def insert_many(model: type[models.Model], objs: Sequence[Any], *, batch_size: int = 2000) -> int:
    """Insert ``objs`` (unsaved instances of ``model``); returns how many were written."""
    if not objs:
        return 0
    connection = connections[router.db_for_write(model)]
    if connection.vendor != "postgresql":
        model._default_manager.bulk_create(objs, batch_size=batch_size)
        return len(objs)
    meta = model._meta
    # A database-generated key (the auto id) is left to its sequence, as bulk_create leaves it.
    fields = [f for f in meta.concrete_fields if not (f.primary_key and f.db_returning)]
    qn = connection.ops.quote_name
    statement = "COPY {} ({}) FROM STDIN".format(
        qn(meta.db_table), ", ".join(qn(str(f.column)) for f in fields)
    )
    with connection.cursor() as wrapper:
        raw = wrapper.cursor  # psycopg's own cursor: Django's wrapper has no copy()
        with raw.copy(statement) as copy:
            for obj in objs:
                copy.write_row([_value(f, obj, connection) for f in fields])
    return len(objs)


def _value(field: Any, obj: Any, connection: Any) -> Any:
    return field.get_db_prep_save(field.pre_save(obj, add=True), connection)
