"""The demo's embedded SQLite serves its own concurrency: threads that read and then write in one
transaction (as every API write, the sync and the admission loop do) wait for each other instead of
failing with "database is locked" (issue 11, defect 2).

Run in a child process on a scratch SQLite file with the settings module's own SQLite options, as
`make demo` runs; the suite's database is PostgreSQL.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

WRITERS = """
import threading, time
import django
django.setup()
from django.db import close_old_connections, connection, transaction

with connection.cursor() as cursor:
    cursor.execute("CREATE TABLE probe (id INTEGER PRIMARY KEY, writer INTEGER)")
failures = []

def write(writer):
    try:
        for _ in range(5):
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SELECT count(*) FROM probe")  # read first, as a decision does
                cursor.fetchone()
                time.sleep(0.02)  # another writer commits meanwhile
                cursor.execute("INSERT INTO probe (writer) VALUES (%s)", [writer])
    except Exception as exc:
        failures.append(repr(exc))
    finally:
        close_old_connections()

threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
with connection.cursor() as cursor:
    cursor.execute("SELECT count(*) FROM probe")
    print(cursor.fetchone()[0], failures)
"""


def test_concurrent_read_then_write_transactions_on_the_demo_sqlite_all_commit(tmp_path):
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'demo.sqlite3'}"}
    env.pop("REDIS_URL", None)
    env["DJANGO_SETTINGS_MODULE"] = "gpuplatform.settings"
    out = subprocess.run(
        [sys.executable, "-c", WRITERS], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split(None, 1) == ["40", "[]\n"]  # 8 writers x 5 rows, and no "database is locked"
