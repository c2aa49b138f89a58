"""Inserting a page of new rows: COPY on PostgreSQL, bulk_create elsewhere (the demo's SQLite).

Profiled on the 5,000-node cold sync (py-spy): Django's bulk_create on PostgreSQL sends one array per
column (INSERT ... SELECT * FROM UNNEST(...)), and with psycopg's client-side binding every element of
those arrays is escaped in Python (ListDumper, a regex per element). For the 100,000 claims, 95,000
units and 60,000 intervals of a cold sync that escaping was 13 % of the wall time. COPY sends the
same rows in psycopg's row format instead, with the same values Django would send.

Preparing those values through each field's ``pre_save`` and ``get_db_prep_save`` was then the
largest part of the COPY (1.3 million calls at 1,000 nodes): for the plain values the sync writes
(a str in a CharField, an int, a bool, a UUID, an aware datetime, a finite Decimal) PostgreSQL's
backend returns them unchanged, so they are sent as they are; JSON goes out through orjson; any other
value, and any field with its own ``pre_save`` (``auto_now``), takes Django's path.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from decimal import Decimal
from functools import cache
from operator import attrgetter, itemgetter
from typing import Any

import orjson
import psycopg
from django.db import connections, models, router
from django.utils import timezone
from psycopg.types.json import Jsonb, set_json_dumps

CREATE_BATCH = 1000

# Field classes (exactly these, not subclasses that may prepare their values) whose value, when of
# one of these types, PostgreSQL's backend sends unchanged.
_PLAIN: dict[type[models.Field[Any, Any]], tuple[type, ...]] = {
    models.CharField: (str,),
    models.TextField: (str,),
    models.BooleanField: (bool,),
    models.IntegerField: (int,),
    models.PositiveIntegerField: (int,),
    models.PositiveSmallIntegerField: (int,),
    models.SmallIntegerField: (int,),
    models.BigIntegerField: (int,),
    models.UUIDField: (uuid.UUID,),
    models.DecimalField: (Decimal,),
    models.DateTimeField: (datetime,),
}


def _json_dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:  # a type orjson does not know: the standard library says what it always said
        return json.dumps(value).encode()


def _plain_types(field: models.Field[Any, Any]) -> tuple[type, ...] | None:
    if isinstance(field, models.ForeignKey):
        return _plain_types(field.target_field)
    if isinstance(field, models.AutoField | models.BigAutoField | models.SmallAutoField):
        return (int,)
    if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
        return None
    return _PLAIN.get(type(field))


def _auto_time(field: models.Field[Any, Any]) -> bool:
    return bool(getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False))


# What a preparer gives: the column's values to COPY, and whether each of them is of the Python type
# the column's binary dumper takes (see _copy).
Prepared = tuple[list[Any], bool]


@cache
def _preparers(model: type[models.Model]) -> tuple[Callable[[list[Any], Any], Prepared], ...]:
    """One function per concrete field: (a column's values, connection) -> the values to COPY.

    Whole columns, not values: a call per value was ~4 % of a cold sync at 1,000 nodes. A column of
    plain values is checked by the set of its values' types (``map``, in C) and sent as it is; a
    column with another type in it is prepared value by value as before."""

    def preparer(field: models.Field[Any, Any]) -> Callable[[list[Any], Any], Prepared]:
        def slow(value: Any, connection: Any) -> Any:
            return field.get_db_prep_save(value, connection)

        if _plain_json(field):

            def json_values(values: list[Any], connection: Any) -> Prepared:
                # Sent as they are: _copy dumps them with _json_dumps (a Jsonb wrapper per value, made
                # for a whole column at once, set off young collections of everything then alive).
                if None not in values:
                    return values, True
                null = slow(None, connection)
                return [null if value is None else value for value in values], null is None

            return json_values
        types = _plain_types(field)
        if types is None:
            return lambda values, connection: ([slow(value, connection) for value in values], False)
        allowed = frozenset(types) | ({type(None)} if field.null else set())
        checked = datetime in types or Decimal in types
        text = types == (str,)

        def plain(value: Any, connection: Any) -> Any:
            if value is None and field.null:
                return None
            kind = type(value)
            if (
                kind not in types
                or (kind is datetime and value.tzinfo is None)  # Django warns and makes it aware
                or (kind is Decimal and not value.is_finite())
            ):
                return slow(value, connection)
            return value

        def plain_values(values: list[Any], connection: Any) -> Prepared:
            kinds = set(map(type, values))
            if (
                kinds <= allowed
                # a choices enum (a str subclass): CharField's preparation gives it back as it is
                or (text and all(kind in allowed or issubclass(kind, str) for kind in kinds))
            ) and not (
                checked
                and any(
                    value.tzinfo is None if type(value) is datetime else not value.is_finite()
                    for value in values
                    if value is not None
                )
            ):
                return values, True
            return [plain(value, connection) for value in values], False

        return plain_values

    return tuple(preparer(field) for field in model._meta.concrete_fields)


@cache
def _binary_types(model: type[models.Model]) -> tuple[int, ...] | None:
    """The oid of each concrete field's column type, for a binary COPY; None where one is not a type
    psycopg knows by name (PostgreSQL's built-in types have fixed oids)."""
    registry, connection = psycopg.adapters.types, connections[router.db_for_write(model)]
    oids = []
    for field in model._meta.concrete_fields:
        info = registry.get(re.sub(r"\(.*\)", "", field.db_type(connection) or "").strip())
        if info is None:
            return None
        oids.append(info.oid)
    return tuple(oids)


def _plain_json(field: models.Field[Any, Any]) -> bool:
    return type(field) is models.JSONField and field.encoder is None


def _copy(model: type[models.Model], connection: Any, columns: list[list[Any]]) -> None:
    """COPY rows given as columns: one list of values per concrete field, in their order.

    In PostgreSQL's binary format where every value is one its column's binary dumper takes (the
    plain values above, JSON): the text format's row formatting here and its parsing in the server
    took twice as long for the intervals (60,000 rows: 0.35 against 0.17 CPU seconds here, 0.70
    against 0.33 s wall). Anything else (a value Django prepared) goes as text, as before."""
    prepared, binary = [], True
    for prepare, values in zip(_preparers(model), columns, strict=True):
        column, plain = prepare(values, connection)
        prepared.append(column)
        binary &= plain
    oids = _binary_types(model) if binary else None
    fields = model._meta.concrete_fields
    if oids is None:  # JSON as text goes in its wrapper (a dict or list has no dumper of its own)
        prepared = [
            [value if value is None or isinstance(value, Jsonb) else Jsonb(value) for value in column]
            if _plain_json(field)
            else column
            for field, column in zip(fields, prepared, strict=True)
        ]
    quote = connection.ops.quote_name
    names = ", ".join(quote(str(field.column)) for field in fields)
    statement = f"COPY {quote(model._meta.db_table)} ({names}) FROM STDIN"
    if oids is not None:
        statement += " (FORMAT BINARY)"
    with connection.cursor() as cursor:
        raw = cursor.cursor  # psycopg's own: Django's wrapper has no copy()
        set_json_dumps(_json_dumps, raw)  # this cursor's JSON, as the Jsonb(..., dumps=) before
        with raw.copy(statement) as copy:
            if oids is not None:
                copy.set_types(oids)
            write = copy.write_row
            for row in zip(*prepared, strict=True):
                write(row)


def _copies(model: type[models.Model]) -> Any:
    """The connection to COPY into, or None where bulk_create does the work (not PostgreSQL, or a
    primary key the database assigns)."""
    connection = connections[router.db_for_write(model)]
    pk = model._meta.pk
    if connection.vendor != "postgresql" or pk is None or not pk.has_default():
        return None
    return connection


def _serial_copies(model: type[models.Model]) -> Any:
    """The connection to COPY into for a model whose integer primary key PostgreSQL assigns (an
    identity or serial column), or None."""
    connection = connections[router.db_for_write(model)]
    pk = model._meta.pk
    if connection.vendor != "postgresql" or not isinstance(pk, models.AutoField | models.BigAutoField):
        return None
    return connection


def _take_serial_ids(model: type[models.Model], connection: Any, objs: Sequence[Any]) -> None:
    """Give each instance the next id of its table's sequence, as the INSERT would have, in order."""
    pk = model._meta.pk
    assert pk is not None
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s) ORDER BY 1",
            [model._meta.db_table, pk.column, len(objs)],
        )
        ids = [row[0] for row in cursor.fetchall()]
    for obj, pk_value in zip(objs, ids, strict=True):
        setattr(obj, pk.attname, pk_value)


def insert_rows(model: type[models.Model], objs: Sequence[Any]) -> None:
    """Insert new model instances like ``bulk_create``: no signals, no ``save()``, every concrete
    field written. A primary key PostgreSQL assigns is taken from its sequence first (the 1,000-node
    cold sync spent 0.7 s in ``bulk_create`` for its 1,018 ResourceSlices, 5x the COPY of their
    24,000 devices), and set on the instances as ``bulk_create`` sets it."""
    if not objs:
        return
    connection = _copies(model)
    if connection is None and (connection := _serial_copies(model)) is not None:
        if any(obj.pk is not None for obj in objs):
            connection = None  # ids chosen by the caller: bulk_create's way
        else:
            _take_serial_ids(model, connection, objs)
    if connection is None:
        model._default_manager.bulk_create(objs, batch_size=CREATE_BATCH)
        return
    _copy(
        model,
        connection,
        [
            [field.pre_save(obj, True) for obj in objs]
            if _auto_time(field)
            else list(map(attrgetter(field.attname), objs))
            for field in model._meta.concrete_fields
        ],
    )
    for obj in objs:
        obj._state.adding = False
        obj._state.db = connection.alias


def insert_values(model: type[models.Model], rows: Sequence[dict[str, Any]]) -> None:
    """``insert_rows`` from ``{attname: value}`` dicts, without building a model instance per row
    (``Model.__init__`` was ~15 % of a cold sync for the claims, units and intervals it inserts):
    a field left out takes its default, an ``auto_now(_add)`` one the time now. Give the primary key
    where the caller needs it afterwards."""
    if not rows:
        return
    connection = _copies(model)
    if connection is None:
        insert_rows(model, [model(**row) for row in rows])
        return
    now = timezone.now()  # what pre_save gives an auto_now(_add) field, given or not
    _copy(
        model,
        connection,
        [
            [now] * len(rows) if _auto_time(field) else _column(field, rows)
            for field in model._meta.concrete_fields
        ],
    )


def _column(field: models.Field[Any, Any], rows: Sequence[dict[str, Any]]) -> list[Any]:
    """One field's values of ``rows``: given, or its default where a row leaves it out."""
    try:
        return list(map(itemgetter(field.attname), rows))
    except KeyError:
        name, default = field.attname, _default_maker(field, len(rows))
        return [row[name] if name in row else default() for row in rows]


def _default_maker(field: models.Field[Any, Any], rows: int) -> Callable[[], Any]:
    """``field.get_default``, or where its answer cannot change (no default, or one that is not
    callable) that answer, read once: ``ForeignKey.get_default`` alone was ~2 % of a cold sync's
    samples for the fields its claims and intervals leave out. A ``uuid4`` primary key takes its
    values from ``random_uuids``, made for ``rows`` rows at most."""
    if field.has_default() and field.default is uuid.uuid4:
        return RandomUuids(rows).next
    if field.has_default() and callable(field.default):
        return field.get_default
    value = field.get_default()
    return lambda: value


# Version 4's fixed bits, as ``uuid.UUID(..., version=4)`` sets them: the variant (RFC 4122) and the
# version number.
_V4_CLEAR = ~((0xC000 << 48) | (0xF000 << 64))
_V4_SET = (0x8000 << 48) | (4 << 76)
_new = object.__new__
_set = object.__setattr__


def random_uuids(count: int) -> list[uuid.UUID]:
    """``count`` version-4 UUIDs, as ``uuid.uuid4()`` makes them (16 bytes of ``os.urandom`` each,
    the version and variant bits set), from one ``os.urandom`` call and without ``UUID.__init__``'s
    checks: ``uuid4`` for the new rows' keys was ~4 % of a cold sync, this is ~2.4 times cheaper."""
    raw = os.urandom(16 * count)
    made = []
    for start in range(0, 16 * count, 16):
        value = _new(uuid.UUID)
        _set(value, "int", int.from_bytes(raw[start : start + 16]) & _V4_CLEAR | _V4_SET)
        _set(value, "is_safe", uuid.SafeUUID.unknown)
        made.append(value)
    return made


class RandomUuids:
    """``uuid.uuid4`` for one insert of up to ``rows`` rows: ``random_uuids`` made when first asked, up
    to a thousand at a time."""

    def __init__(self, rows: int) -> None:
        self._rows = rows
        self._left: list[uuid.UUID] = []

    def next(self) -> uuid.UUID:
        if not self._left:
            self._left = random_uuids(max(1, min(self._rows, 1000)))
            self._rows -= len(self._left)
        return self._left.pop()
