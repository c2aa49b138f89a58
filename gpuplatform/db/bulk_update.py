"""Updating many rows, each with its own values, and inserting many, in one statement a batch.

Django's ``bulk_update`` writes one statement with a ``CASE WHEN id = ... THEN ...`` per field and
row, and ``bulk_create`` compiles each value through the ORM's SQL compiler: both cost O(rows x fields)
in Python, and for the admission loop's 20 rows x 13 fields a cohort that was most of its writing.
Here the SQL is written once from the model's metadata and the values, adapted by each field as Django
would, travel as parameters: ``update_each`` as one ``UPDATE ... FROM unnest(<one array a column>)``
(one statement where an ``executemany`` in psycopg's pipeline sent one per row), ``insert_each`` as one
multi-row ``INSERT ... RETURNING`` the primary keys, ``insert_with_keys`` as one multi-row ``INSERT``
of rows whose keys are given. Inside `gpuplatform.db.together.writes_together` each statement is
queued and sent with the block's other writes in one round trip (keys are set on the objects then).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

from django.db import connections, models, router

from gpuplatform.db.together import write

# PostgreSQL takes at most 65,535 parameters a statement; batches are cut below that.
MAX_PARAMETERS = 60_000
MAX_ROWS = 10_000  # rows one UPDATE's arrays carry at most
UPDATE_FROM_ARRAYS = (
    "UPDATE {table} SET {sets} FROM unnest({arrays}) AS v ({names}) WHERE {table}.{pk} = v.{pk}"
)


def update_each(model: type[models.Model], objs: Sequence[Any], fields: Sequence[str]) -> None:
    """Write ``fields`` of each saved instance in ``objs``; no signals, no ``save()``, like
    ``bulk_update``. Fields are given by name (a foreign key by its field name, e.g. ``preempted_by``).
    An instance given twice is written once, with its values as they are now."""
    if not objs:
        return
    meta = model._meta
    connection = connections[router.db_for_write(model)]
    concrete = [_column(meta.get_field(name)) for name in fields]
    pk = _column(meta.pk)
    qn = connection.ops.quote_name
    if connection.vendor != "postgresql":  # the demo's SQLite has no arrays: one UPDATE a row
        _update_each_row(connection, meta, concrete, pk, objs)
        return
    columns = [pk, *concrete]
    # One array a column, unnested into rows: the statement's text is the same whatever the number of
    # rows (psycopg parses it once), and the values, cast to their columns' types, stay parameters.
    # Identifiers come from the model's metadata, quoted.
    sql = UPDATE_FROM_ARRAYS.format(
        table=qn(meta.db_table),
        sets=", ".join(f"{qn(str(f.column))} = v.{qn(str(f.column))}" for f in concrete),
        arrays=", ".join(f"%s::{field.cast_db_type(connection)}[]" for field in columns),
        names=", ".join(qn(str(field.column)) for field in columns),
        pk=qn(str(pk.column)),
    )
    latest = list({obj.pk: obj for obj in objs}.values())  # UPDATE ... FROM joins each row once
    for start in range(0, len(latest), MAX_ROWS):
        batch = latest[start : start + MAX_ROWS]
        arrays = [
            [field.get_db_prep_save(getattr(obj, field.attname), connection) for obj in batch]
            for field in columns
        ]
        write(sql, arrays)


def _update_each_row(
    connection: Any,
    meta: Any,
    concrete: list[models.Field[Any, Any]],
    pk: models.Field[Any, Any],
    objs: Sequence[Any],
) -> None:
    qn = connection.ops.quote_name
    # Identifiers come from the model's metadata, quoted; every value is a parameter.
    sql = "UPDATE {} SET {} WHERE {} = %s".format(  # noqa: S608
        qn(meta.db_table),
        ", ".join(f"{qn(str(field.column))} = %s" for field in concrete),
        qn(str(pk.column)),
    )
    rows = [
        [field.get_db_prep_save(getattr(obj, field.attname), connection) for field in concrete]
        + [pk.get_db_prep_save(obj.pk, connection)]
        for obj in objs
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)


def insert_each(model: type[models.Model], objs: Sequence[Any]) -> None:
    """Insert each unsaved instance in ``objs`` (its primary key left to the database, and set on it
    from ``RETURNING``); no signals, no ``save()``, like ``bulk_create`` on PostgreSQL."""
    if not objs:
        return
    meta = model._meta
    connection = connections[router.db_for_write(model)]
    if connection.vendor != "postgresql":  # the demo's SQLite: Django's own bulk insert
        model._default_manager.bulk_create(objs)
        return
    pk = _column(meta.pk)
    fields = [field for field in meta.concrete_fields if field is not pk]
    for batch, sql, params in _inserts(connection, meta, fields, objs, returning=str(pk.column)):
        write(sql, params, partial(_set_keys, batch, connection.alias))


def _set_keys(batch: Sequence[Any], alias: str, rows: list[tuple[Any, ...]] | None) -> None:
    # PostgreSQL returns a multi-row VALUES insert's rows in the order given.
    for obj, (value,) in zip(batch, rows or (), strict=True):
        obj.pk = value
        obj._state.adding = False
        obj._state.db = alias


def insert_with_keys(model: type[models.Model], objs: Sequence[Any]) -> None:
    """Insert each unsaved instance in ``objs`` with the primary key it carries (a UUID made by the
    caller), every concrete field prepared as ``save(force_insert=True)`` prepares it (``auto_now``
    included); no signals. One statement (elsewhere than PostgreSQL: ``save`` each)."""
    if not objs:
        return
    meta = model._meta
    connection = connections[router.db_for_write(model)]
    if connection.vendor != "postgresql":
        for obj in objs:
            obj.save(force_insert=True)
        return
    for batch, sql, params in _inserts(connection, meta, list(meta.concrete_fields), objs, returning=None):
        write(sql, params)
        for obj in batch:
            obj._state.adding = False
            obj._state.db = connection.alias


def _inserts(
    connection: Any,
    meta: Any,
    fields: list[models.Field[Any, Any]],
    objs: Sequence[Any],
    *,
    returning: str | None,
) -> Iterator[tuple[Sequence[Any], str, list[Any]]]:
    """Multi-row INSERTs of ``objs`` (each batch under PostgreSQL's parameter limit), every field
    prepared as ``save`` prepares it: (the batch, the statement, its parameters)."""
    qn = connection.ops.quote_name
    row_sql = "({})".format(", ".join(["%s"] * len(fields)))
    tail = f" RETURNING {qn(returning)}" if returning else ""
    per_statement = max(1, MAX_PARAMETERS // len(fields))
    for start in range(0, len(objs), per_statement):
        batch = objs[start : start + per_statement]
        params = [
            field.get_db_prep_save(field.pre_save(obj, add=True), connection)
            for obj in batch
            for field in fields
        ]
        # Identifiers come from the model's metadata, quoted; every value is a parameter.
        sql = "INSERT INTO {} ({}) VALUES {}{}".format(  # noqa: S608
            qn(meta.db_table),
            ", ".join(qn(str(field.column)) for field in fields),
            ", ".join([row_sql] * len(batch)),
            tail,
        )
        yield batch, sql, params


def _column(field: Any) -> models.Field[Any, Any]:
    if not isinstance(field, models.Field) or not field.concrete or field.column is None:
        raise ValueError(f"{field!r} is not a column of this table")
    return field
