"""SQL that several apps' migrations share: PostgreSQL-only steps and the stamp tables of
`gpuplatform.db.stamped_cache`. Migrations import this, so what it returns for a given name must never
change; a new shape gets a new function."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def on_postgresql(sql: str) -> Callable[[Any, Any], None]:
    """A RunPython step that runs ``sql`` on PostgreSQL and does nothing elsewhere (the demo's SQLite)."""

    def run(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)

    return run


def create_stamp(name: str) -> str:
    """A one-row table ``name`` and the trigger function ``name``_bump() that renews its stamp from the
    sequence ``name``_seq, in the writer's transaction. ``name`` is a constant of a migration."""
    return f"""
CREATE SEQUENCE IF NOT EXISTS {name}_seq;
CREATE TABLE IF NOT EXISTS {name} (id integer PRIMARY KEY CHECK (id = 1), stamp bigint NOT NULL);
INSERT INTO {name} (id, stamp) VALUES (1, nextval('{name}_seq')) ON CONFLICT (id) DO NOTHING;

CREATE OR REPLACE FUNCTION {name}_bump() RETURNS trigger AS $$
BEGIN
    INSERT INTO {name} (id, stamp) VALUES (1, nextval('{name}_seq'))
    ON CONFLICT (id) DO UPDATE SET stamp = EXCLUDED.stamp;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;
"""  # noqa: S608


def drop_stamp(name: str) -> str:
    return f"""
DROP FUNCTION IF EXISTS {name}_bump();
DROP TABLE IF EXISTS {name};
DROP SEQUENCE IF EXISTS {name}_seq;
"""
