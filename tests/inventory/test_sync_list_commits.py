"""A list's pages commit without waiting for their WAL flush (inventory/sync/runner.py): the setting
is made once for a list's pages, not once a page (a round trip each), and put back before the list's
last transaction, which commits normally."""

from __future__ import annotations

from collections import Counter

import pytest
from django.db import connection

from inventory.models import SyncKind
from inventory.sync.runner import ClusterSync

pytestmark = pytest.mark.django_db(transaction=False)


def _setting() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return cursor.fetchone()[0]


def test_a_list_sets_synchronous_commit_once_for_its_pages_and_puts_it_back(
    kubesim_factory, register, mapped
):
    sim = kubesim_factory(scenario="mixed", nodes=20, seed=1)
    cluster = register(sim)
    sync = ClusterSync(cluster, page_size=5)
    before = _setting()
    sent: list[str] = []
    during: Counter[str] = Counter()

    def record(execute, sql, params, many, context):
        sent.append(sql)
        return execute(sql, params, many, context)

    def on_page(kind: str, number: int) -> None:
        during[_setting()] += 1

    with connection.execute_wrapper(record):
        _, listed = sync.list_kind(SyncKind.NODES, on_page=on_page)

    assert listed == 20
    assert sum(during.values()) == 4  # 20 nodes, 5 a page
    assert during == Counter({"off": 4})  # each page committed without the flush
    settings = [sql for sql in sent if "synchronous_commit" in sql and not sql.startswith("SHOW")]
    assert settings == ["SET synchronous_commit TO OFF", "RESET synchronous_commit"]
    # the SyncState row's transaction comes after the setting is put back
    assert sent.index("RESET synchronous_commit") < max(
        i for i, sql in enumerate(sent) if "inventory_syncstate" in sql
    )
    assert _setting() == before
