"""The advisory-lock registry: one number per purpose, pinned, and a lock taken by one transaction
holds off every other until it ends (checked from a second connection, as another process would)."""

from __future__ import annotations

import ast
import inspect
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from django.db import connection, transaction

from gpuplatform.db import locks
from gpuplatform.db.locks import LockSpace, id_key, lock_ids, lock_name

# What processes of every released version lock. A rolling deploy runs old and new side by side:
# they exclude each other only while these numbers stay as they are. Add, never change.
PINNED = {
    "QUOTA_FLAVOR": 50_501,
    "QUOTA_COHORT": 50_502,
    "QUOTA_NAMESPACE": 50_503,
    "ADMISSION_APPLY": 50_512,
    "KUEUE_APPLY": 50_521,
    "KUEUE_CHECK": 50_522,
}


def test_every_lock_space_keeps_its_number():
    assert {space.name: space.value for space in LockSpace} == PINNED


def test_no_two_lock_spaces_share_a_number():
    # An IntEnum makes a repeated value a silent alias, so read the numbers as written.
    tree = ast.parse(inspect.getsource(locks))
    body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "LockSpace").body
    numbers = [ast.literal_eval(n.value) for n in body if isinstance(n, ast.Assign)]
    assert len(numbers) == len(set(numbers)) == len(PINNED)


@pytest.mark.django_db(transaction=True)  # the plain ``db`` fixture runs each test in a transaction
def test_a_lock_is_refused_outside_a_transaction():
    with pytest.raises(RuntimeError, match=r"inside transaction\.atomic"):
        lock_name(LockSpace.QUOTA_NAMESPACE, "cluster/ns")


@pytest.fixture
def other() -> Iterator[psycopg.Connection]:
    """A second session on the test database: another process's view of the locks."""
    db = connection.settings_dict
    with psycopg.connect(
        host=db["HOST"] or "127.0.0.1",
        port=db["PORT"] or 5432,
        user=db["USER"],
        dbname=db["NAME"],
        autocommit=True,
    ) as conn:
        yield conn


def free(conn: psycopg.Connection, space: int, key: int | str) -> bool:
    """Whether the other session could take (space, key) now (it lets go again at once)."""
    sql = "hashtext(%s)" if isinstance(key, str) else "%s"
    with conn.transaction(), conn.cursor() as cursor:
        cursor.execute(f"SELECT pg_try_advisory_xact_lock(%s, {sql})", [space, key])
        row = cursor.fetchone()
    assert row is not None
    return bool(row[0])


@pytest.mark.django_db(transaction=True)
def test_a_named_lock_holds_off_other_sessions_until_the_transaction_ends(other):
    with transaction.atomic():
        lock_name(LockSpace.QUOTA_NAMESPACE, "cluster-1/team-a")
        assert not free(other, 50_503, "cluster-1/team-a")
        assert free(other, 50_503, "cluster-1/team-b")  # another namespace
        assert free(other, 50_512, "cluster-1/team-a")  # another purpose, the same name
    assert free(other, 50_503, "cluster-1/team-a")


@pytest.mark.django_db(transaction=True)
def test_locks_by_id_take_the_ids_first_four_bytes_in_the_flavor_space(other):
    first, second = uuid.UUID(int=7 << 96), uuid.UUID(int=9 << 96)
    assert (id_key(first), id_key(second)) == (7, 9)
    with transaction.atomic():
        lock_ids(LockSpace.QUOTA_FLAVOR, [second, first, second])
        assert not free(other, 50_501, 7) and not free(other, 50_501, 9)
        assert free(other, 50_502, 7)  # the cohort space is apart
    assert free(other, 50_501, 7) and free(other, 50_501, 9)
